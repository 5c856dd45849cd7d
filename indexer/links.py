"""Perspective -> evidence links, computed at index time so a search never retrieves evidence.

What backs a perspective does not depend on the claim: on the debate sites PERSPECTRUM was built
from, a perspective's evidence is the paragraph written under it. So each perspective gets its
top evidence paragraphs once, when the pools are indexed, and the engine only looks them up.

Candidates: the perspective's stored dense vector against the evidence pool's dense index, and its
text against the evidence BM25 index, fused with reciprocal rank fusion. Measured on PERSPECTRUM
dev when links were introduced: perspective-only queries beat claim + perspective queries, and the
fusion beats either retriever alone.

Stored in `links.sqlite` beside the pools of a version (perspect.core.links, the format).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspect.core.links import DEPTH, KEEP, RRF_K, Link, Links
from perspect.retriever.fusion import rrf

__all__ = ["DEPTH", "KEEP", "RRF_K", "Link", "Links", "compute"]


def compute(
    items: Sequence[tuple[str, str]],
    evidence_backends: dict,
    perspective_vectors: np.ndarray | None,
    keep: int = KEEP,
    depth: int = DEPTH,
    progress=None,
) -> list[tuple[str, list[Link]]]:
    """Links for `items` [(perspective id, text)] against the evidence pool's backends.

    Uses whichever of `bm25` and `dense` the index has (ColBERT adds query encoding cost per
    perspective for little gain here and is left out).
    """
    dense = evidence_backends.get("dense")
    bm25 = evidence_backends.get("bm25")
    dense_runs: list[list[tuple[str, float]]] = [[] for _ in items]
    cos: list[dict[str, float]] = [{} for _ in items]
    if dense is not None and perspective_vectors is not None and len(items):
        dense_runs = dense.search_vectors(perspective_vectors, depth)
        cos = [dict(r) for r in dense_runs]
    out = []
    for n, (pid, text) in enumerate(items):
        runs = [dense_runs[n]]
        if bm25 is not None:
            runs.append(bm25.search(text, depth))
        fused = rrf([r for r in runs if r], k=RRF_K, limit=keep)
        out.append((pid, [Link(e, float(s), float(cos[n].get(e, 0.0))) for e, s in fused]))
        if progress:
            progress(1)
    return out
