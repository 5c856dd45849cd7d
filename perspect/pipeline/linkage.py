"""Complete-link agglomeration that asks for a pair's equivalence score only when a merge
depends on it, under a budget of scored pairs.

Why lazy: the equivalence model's passes are the search's tail (issue 42: up to ~670 passes on
claims with many kept perspectives). Each pair's stacked probability lies between its value at
the model's lowest score and at its highest (`lo`, `hi`: the stack is monotone in one feature),
so complete-link can run on those bounds: the cluster pair with the highest *upper* bound on its
link (the least similar pair across it) is the next merge as soon as that link is known exactly,
since every other link is at most its bound. Only then are that cluster pair's unknown pairs
scored. The partitions are those of scoring every pair (tests/test_linkage.py); simulated on 60
dev claims it needed a third fewer passes at the tail (bench/STUDIES.md, "Lazy complete-link").

Why a budget: what is left unscored when it runs out counts as the model's lowest score (`lo`),
so the answer degrades by merging fewer pairs, never by taking longer. The pairs scored first are
those the agglomeration needs first: the most similar clusters' pairs.

Scoring is batched: each round scores the unknown pairs of the best cluster pair and fills the
batch with those of the next best ones (which later rounds would mostly need anyway), because a
pass in a batch of eight costs far less than eight passes one at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Scorer = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (rows i, cols j) -> exact probabilities


@dataclass(frozen=True)
class Linked:
    """Cluster labels (one per item) and the pairs (i < j) whose score was asked for."""

    labels: np.ndarray
    scored: tuple[tuple[int, int], ...]
    exhausted: bool  # the budget ran out before the agglomeration ended


def lazy_complete_link(
    lo: np.ndarray,
    hi: np.ndarray,
    allowed: np.ndarray,
    cut: float,
    score: Scorer,
    budget: int | None = None,
    batch: int = 8,
    known: np.ndarray | None = None,
) -> Linked:
    """Complete-link labels of n items, as `clusters.complete_link` over the exact probabilities,
    asking `score(i, j)` only for the pairs a merge depends on.

    `lo`, `hi` (n x n, symmetric): each pair's probability at the model's lowest and highest
    score; where they are equal (or `known` says so) `lo` is exact and never asked for. `allowed`
    (n x n): pairs that may share a cluster. `budget`: at most this many pairs scored (None: no
    limit); the rest keep `lo`. `batch`: pairs per call of `score`."""
    n = len(lo)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.maximum(np.asarray(hi, dtype=np.float64), lo)
    ok = np.asarray(allowed, dtype=bool).copy()
    np.fill_diagonal(ok, False)
    # a pair whose best case stays under the cut never joins a merge: its exact value is moot
    exact = (hi <= lo) | (hi < cut) | ~ok
    if known is not None:
        exact |= np.asarray(known, dtype=bool)
    val = np.where(exact, lo, hi)  # exact where known, else the upper bound
    val[~ok] = -np.inf
    np.fill_diagonal(val, np.inf)
    unknown = ~exact
    np.fill_diagonal(unknown, False)
    scored: list[tuple[int, int]] = []
    left = np.inf if budget is None else max(0, int(budget))
    members = [[i] for i in range(n)]
    alive = list(range(n))
    exhausted = False
    link = val.copy()  # cluster x cluster (by each cluster's first item): bound on its link
    owner = np.arange(n)

    def lower(i: np.ndarray, j: np.ndarray) -> None:
        """Pairs whose value went down (scored, or given up): their clusters' link bounds too."""
        ci, cj = owner[i], owner[j]
        np.minimum.at(link, (ci, cj), val[i, j])  # several pairs may share one cluster pair
        np.minimum.at(link, (cj, ci), val[i, j])

    def give_up() -> None:
        nonlocal exhausted
        exhausted = bool(unknown.any())
        i, j = np.nonzero(unknown)
        val[i, j] = lo[i, j]
        unknown[:] = False
        lower(i, j)

    if left == 0:
        give_up()
    while len(alive) > 1:
        idx = np.array(alive)
        sub = link[np.ix_(idx, idx)]
        np.fill_diagonal(sub, -np.inf)
        a, b = np.unravel_index(int(np.argmax(sub)), sub.shape)
        best = sub[a, b]
        if best < cut or best <= 0:
            break
        ca, cb = alive[a], alive[b]
        block = np.ix_(members[ca], members[cb])
        if not unknown[block].any() or _decided(val[block], unknown[block], lo[block]):
            members[ca] += members[cb]
            owner[members[cb]] = ca
            link[ca, :] = np.minimum(link[ca, :], link[cb, :])
            link[:, ca] = link[ca, :]
            link[ca, ca] = np.inf
            alive.remove(cb)
            continue
        # score this cluster pair's unknown pairs, then the next best cluster pairs' ones
        want: list[tuple[int, int]] = []
        cap = int(min(left, max(batch, 1)))
        for flat in np.argsort(-np.triu(sub + 0.0, 1), axis=None, kind="stable"):
            x, y = np.unravel_index(int(flat), sub.shape)
            if x >= y:
                continue
            if sub[x, y] < cut or len(want) >= cap:
                break
            # the block's lowest bounds first: one of them decides a link that will not merge
            rows, cols = members[alive[x]], members[alive[y]]
            p, q = np.nonzero(unknown[np.ix_(rows, cols)])
            for r in np.argsort(hi[np.ix_(rows, cols)][p, q], kind="stable"):
                i, j = rows[p[r]], cols[q[r]]
                want.append((min(i, j), max(i, j)))
        want = want[:cap]
        if not want:
            give_up()
            continue
        i, j = (np.array(x) for x in zip(*want, strict=True))
        got = np.asarray(score(i, j), dtype=np.float64)
        val[i, j] = val[j, i] = got
        unknown[i, j] = unknown[j, i] = False
        lower(i, j)
        scored.extend(want)
        left -= len(want)
        if left <= 0:
            give_up()
    labels = np.zeros(n, dtype=int)
    for lab, c in enumerate(alive):
        labels[members[c]] = lab
    return Linked(labels, tuple(scored), exhausted)


def _decided(val: np.ndarray, unknown: np.ndarray, lo: np.ndarray) -> bool:
    """Whether a block's link (the min over its pairs) is already exact: a known pair is at or
    under every unknown pair's lowest possible value."""
    known = val[~unknown]
    return bool(known.size) and float(known.min()) <= float(lo[unknown].min())
