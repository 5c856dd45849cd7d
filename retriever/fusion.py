"""Reciprocal rank fusion (Cormack et al. 2009): score(d) = sum over runs of 1 / (k + rank(d)).

Rank-based, so BM25 scores (unbounded) and ColBERT MaxSim sums (bounded by query length) need no
calibration against each other; k=60 is the value from the paper and the usual default.
"""

from __future__ import annotations

from collections.abc import Sequence


def rrf(
    runs: Sequence[Sequence[tuple[str, float]]],
    k: int = 60,
    limit: int | None = None,
) -> list[tuple[str, float]]:
    """Fuse ranked (id, score) lists; ties keep the order of first appearance. (Per-run weights
    were measured and not kept: bench/STUDIES.md.)"""
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    fused: dict[str, float] = {}
    for run in runs:
        for rank, (doc, _score) in enumerate(run, start=1):
            fused[doc] = fused.get(doc, 0.0) + 1 / (k + rank)
    out = sorted(fused.items(), key=lambda x: -x[1])
    return out[:limit] if limit is not None else out
