from __future__ import annotations

import pytest

from retriever.fusion import rrf


def test_rrf_fuses_ranks_not_scores():
    bm25 = [("a", 12.0), ("b", 9.0), ("c", 1.0)]
    colbert = [("c", 0.9), ("a", 0.8), ("d", 0.1)]
    fused = rrf([bm25, colbert], k=60)
    assert [d for d, _ in fused] == ["a", "c", "b", "d"]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert rrf([bm25, colbert], k=60, limit=2) == fused[:2]
    with pytest.raises(ValueError):
        rrf([bm25], k=-1)


def test_rrf_weights_scale_each_run():
    bm25 = [("a", 12.0), ("b", 9.0)]
    dense = [("b", 0.9), ("c", 0.8)]
    assert rrf([bm25, dense], weights=[1.0, 1.0]) == rrf([bm25, dense])
    fused = rrf([bm25, dense], k=60, weights=[0.25, 1.0])
    assert [d for d, _ in fused] == ["b", "c", "a"]
    assert fused[0][1] == pytest.approx(0.25 / 62 + 1 / 61)
    # weight 0 drops a run's say (its ids stay, scored 0)
    assert [d for d, s in rrf([bm25, dense], weights=[0.0, 1.0]) if s > 0] == ["b", "c"]
    with pytest.raises(ValueError, match="2 runs"):
        rrf([bm25, dense], weights=[1.0])
