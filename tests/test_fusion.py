from __future__ import annotations

import pytest

from perspect.retriever.fusion import rrf


def test_rrf_fuses_ranks_not_scores():
    bm25 = [("a", 12.0), ("b", 9.0), ("c", 1.0)]
    colbert = [("c", 0.9), ("a", 0.8), ("d", 0.1)]
    fused = rrf([bm25, colbert], k=60)
    assert [d for d, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert rrf([bm25, colbert], k=60, limit=2) == fused[:2]
    with pytest.raises(ValueError):
        rrf([bm25], k=-1)
