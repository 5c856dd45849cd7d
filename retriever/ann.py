"""The dense backend's faiss index kinds: exact flat under `ann_min` vectors, IVF-Flat past it.

Why an approximate index at all: an exact scan grows with the pool (bench/scale.py, 2 cores: 1M
news sentences, p95 171 ms through the backend on an idle machine); IVF-Flat scans `nprobe` of its
~4 sqrt(n) lists, a few percent of the pool: at 1M, p95 14 ms through the backend (query encoding
included) at recall@10 .999 against flat (docs/scale-out.md, the table and its caveats).

Why IVF-Flat and not HNSW (measured on the same 1M x 384 pool): faiss HNSW (M 32, efConstruction
40) built no faster (255 s vs 233 s on a contended machine; 477 s vs 106 s in an earlier run) and
reached recall@10 only .72 / .82 / .90 at efSearch 128 / 256 / 512, because the news pool is full
of near-duplicates (the bench's noisy copies; in real news, agency copy reprinted by many outlets)
that its greedy graph walk cannot tell apart, where IVF puts them in one list and ranks them
exactly there. IVF also deletes by id, which a faiss HNSW cannot.

Why small pools stay flat: exact results and no training below `ann_min` (200,000 by default:
a flat scan of 100k answered in 22 ms p95 through the backend, of 1M in 171 ms).

Ids: IVF stores the backend's int64 ids itself (`add_with_ids`) with a hashtable direct map, so
`remove_ids` and `reconstruct` by id behave as in the flat index's IndexIDMap2. (IndexIDMap2 over
an IVF would not: it assumes the sub-index renumbers what is left after a delete; IVF does not.)
Adds after the switch go into the trained lists (no retraining); the lists are re-planned at a
commit once the pool has grown `REPLAN_GROWTH` times past what they were trained on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FLAT = "flat"
IVF = "ivf"
LISTS_PER_SQRT = 4  # nlist ~ 4 sqrt(n): 4,000 lists at 1M
MIN_PER_LIST = 39  # faiss's k-means wants >= 39 training points a centroid
TRAIN_PER_LIST = 64  # training sample: 64 points a list (256k at 1M), not the whole pool
TRAIN_ITER = 10  # k-means iterations: the lists only route queries; nprobe absorbs rough edges
REPLAN_GROWTH = 4.0  # re-plan the lists once the pool is 4x what they were trained on
ADD_CHUNK = 100_000  # vectors per add call: bounds the temporary assignment buffers


@dataclass(frozen=True)
class Plan:
    """What a commit does to the index: keep it, or rebuild it as `kind` (a new IVF plan or flat)."""

    kind: str
    rebuild: bool
    reason: str = ""


def kind_of(index) -> str:
    import faiss

    return IVF if isinstance(faiss.downcast_index(index), faiss.IndexIVF) else FLAT


def empty_flat(dim: int):
    import faiss

    return faiss.IndexIDMap2(faiss.IndexFlatIP(dim))


def nlist_for(n: int) -> int:
    """~4 sqrt(n) lists, but no more than the pool can train (39 points a list)."""
    return max(1, min(round(LISTS_PER_SQRT * math.sqrt(n)), n // MIN_PER_LIST))


def plan(kind: str, n: int, trained_on: int, ann_min: int) -> Plan:
    """Flat until the pool reaches `ann_min`; IVF from then on, re-planned when the pool has grown
    REPLAN_GROWTH times past its training; back to flat only under half of `ann_min` (so a pool
    hovering around the threshold does not rebuild at every commit)."""
    if kind == FLAT:
        if n >= max(ann_min, MIN_PER_LIST):  # an IVF needs something to train on
            return Plan(IVF, True, f"{n:,} vectors >= ann_min {ann_min:,}")
        return Plan(FLAT, False)
    if n < ann_min // 2:
        return Plan(FLAT, True, f"{n:,} vectors < ann_min/2")
    if n > REPLAN_GROWTH * max(trained_on, 1):
        return Plan(IVF, True, f"{n:,} vectors > {REPLAN_GROWTH:g} x {trained_on:,} trained on")
    return Plan(IVF, False)


def contents(index) -> tuple[np.ndarray, np.ndarray]:
    """(ids, vectors) of a flat IndexIDMap2 or an IVF-Flat index, in storage order."""
    import faiss

    inner = faiss.downcast_index(index)
    if isinstance(inner, faiss.IndexIVF):
        from faiss.contrib.inspect_tools import get_invlist

        ids, vecs = [], []
        for li in range(inner.nlist):
            got_ids, codes = get_invlist(inner.invlists, li)
            ids.append(got_ids)
            vecs.append(codes.view(np.float32).reshape(-1, inner.d))
        return np.concatenate(ids).astype(np.int64), np.concatenate(vecs)
    flat = faiss.downcast_index(inner.index)
    n, d = flat.ntotal, flat.d
    vecs = faiss.rev_swig_ptr(flat.get_xb(), n * d).reshape(n, d).copy() if n else np.zeros((0, d))
    return faiss.vector_to_array(inner.id_map).astype(np.int64), vecs.astype(np.float32, copy=False)


def build(kind: str, ids: np.ndarray, vecs: np.ndarray, nprobe: int, seed: int = 0):
    """A new index of `kind` holding (ids, vecs): IVF lists trained by spherical k-means on a
    sample of TRAIN_PER_LIST points a list."""
    import faiss

    d = vecs.shape[1]
    if kind == FLAT:
        index = empty_flat(d)
        if len(ids):
            index.add_with_ids(np.ascontiguousarray(vecs, dtype=np.float32), ids)
        return index
    n = len(ids)
    nlist = nlist_for(n)
    quantizer = faiss.IndexFlatIP(d)
    index = faiss.IndexIVFFlat(quantizer, d, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.spherical = True  # unit vectors: centroids renormalised, inner product = cosine
    index.cp.niter = TRAIN_ITER
    index.cp.seed = seed
    index.cp.max_points_per_centroid = TRAIN_PER_LIST
    rng = np.random.default_rng(seed)
    sample = np.sort(rng.choice(n, min(n, TRAIN_PER_LIST * nlist), replace=False))
    index.train(np.ascontiguousarray(vecs[sample], dtype=np.float32))
    index.set_direct_map_type(faiss.DirectMap.Hashtable)  # remove_ids / reconstruct by id
    for s in range(0, n, ADD_CHUNK):
        index.add_with_ids(
            np.ascontiguousarray(vecs[s : s + ADD_CHUNK], dtype=np.float32), ids[s : s + ADD_CHUNK]
        )
    set_nprobe(index, nprobe)
    return index


def set_nprobe(index, nprobe: int) -> None:
    import faiss

    inner = faiss.downcast_index(index)
    if isinstance(inner, faiss.IndexIVF):
        inner.nprobe = max(1, min(int(nprobe), inner.nlist))
