"""Cited reasons from the reader's documents and the news, for clusters whose evidence has none.

A cluster's reason comes first from its evidence paragraphs (perspect.pipeline.why). Nearly half
of the on-topic clusters still say "no backing sentence found" (bench/RESULTS.md, the reader
bench): their paragraphs only relate, or there are none. The index often holds the reason
elsewhere: a sentence of a reader's document, or of a news article, that argues for the
perspective. Each such cluster looks for one there:

1. the sentences nearest its representative in the pool's stored vectors (no encoding: the
   perspective's vector and the sentences' are both index-time data), down to `NEAR`;
2. each sentence judged by the argument model against each of the cluster's phrasings (they say
   one thing, and the model reads some wordings better than others): perspect.pipeline.arguing's
   judge_pairs, remembered by the process and kept with the index, so a pair is judged once; a
   document sentence's lower states are stored with it, a news sentence's computed the first
   time;
3. the best sentence whose P(for) reaches the "supports" cut for some phrasing, and whose
   P(against) stays under the "argues against" cut for all, is cited with its source (outlet,
   date, title), unless it only restates a phrasing, or the answer shows it already as a mined
   argument.

Bounded so that it does not become the search's tail: at most `PER_CLUSTER` sentences per
cluster and `BUDGET` pairs judged for the first time per search (the nearest first); the rest are
looked at by a later search, once these judgments are kept.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perspect.core.index.stance_states import dequantize
from perspect.core.result import PerspectiveCluster, Provenance, Why
from perspect.core.types import REASON_POOLS
from perspect.pipeline import why

NEAR = 0.5  # cosine of the dense vectors at which a sentence is worth judging
PER_CLUSTER = 3  # sentences judged per cluster, nearest first
BUDGET = 16  # pairs judged for the first time per search


class PoolReasons:
    """Reasons from `REASON_POOLS` for the clusters without one (the argument model decides)."""

    def __init__(self, searcher, arguing, clusters: int):
        self.searcher, self.arguing, self.clusters = searcher, arguing, clusters

    @property
    def active(self) -> bool:
        return self.arguing is not None and self.arguing.cuts is not None and bool(self._pools())

    def _pools(self) -> list[str]:
        have = self.searcher.pools
        return [
            p for p in REASON_POOLS if p in have and self.searcher.vector_backend(p) is not None
        ]

    def __call__(self, clusters: list[PerspectiveCluster]) -> list[PerspectiveCluster]:
        if not self.active:
            return clusters
        todo = [
            i for i, c in enumerate(clusters[: self.clusters]) if c.why is None and not c.mined_only
        ]
        if not todo:
            return clusters
        persp = self.searcher.vector_backend("perspectives")
        if persp is None:
            return clusters
        reps = [clusters[i].representative for i in todo]
        vecs = persp.vectors([m.id for m in reps])
        found = self._near(vecs)  # per cluster: [(pool, id, cosine)], nearest first
        shown = {m.id for c in clusters for m in c.members if m.mined}  # never shown twice
        items = self._items(found)
        # (cluster index, member id, pool, sentence id): each sentence against each phrasing
        pairs: list[tuple[int, str, str, str]] = []
        for i, near in zip(todo, found, strict=True):
            said = [m for m in clusters[i].members if not m.mined]
            pairs += [(i, m.id, pool, sid) for pool, sid, _ in near
                      if (pool, sid) in items and sid not in shown for m in said]  # fmt: skip
        if not pairs:
            return clusters
        texts = {m.id: m.text for i in todo for m in clusters[i].members if not m.mined}
        pairs = self._within_budget(pairs, items, texts)
        got = self.arguing.judge_pairs(
            texts,
            [(mid, items[(pool, sid)].text) for _, mid, pool, sid in pairs],
            self._stored_states(pairs, items),
        )
        # per (cluster, sentence): P(for) of the phrasing it most argues for, the most against
        best_for: dict[tuple[int, str, str], float] = {}
        most_against: dict[tuple[int, str, str], float] = {}
        for (i, _, pool, sid), (pf, pa) in zip(pairs, got, strict=True):
            k = (i, pool, sid)
            best_for[k] = max(best_for.get(k, 0.0), pf)
            most_against[k] = max(most_against.get(k, 0.0), pa)
        cuts = self.arguing.cuts
        best: dict[int, tuple[float, str, str]] = {}
        for (i, pool, sid), pf in best_for.items():
            if pf < cuts.for_at or most_against[(i, pool, sid)] >= cuts.against_at:
                continue
            if any(why.restates(m.text, items[(pool, sid)].text) for m in clusters[i].members):
                continue
            if i not in best or pf > best[i][0]:
                best[i] = (pf, pool, sid)
        out = list(clusters)
        for i, (_, pool, sid) in best.items():
            item = items[(pool, sid)]
            source = Provenance.of(pool, sid, item.metadata)
            out[i] = replace(out[i], why=Why(sid, item.text, (0, len(item.text)), source))
        return out

    def _near(self, vecs: np.ndarray) -> list[list[tuple[str, str, float]]]:
        found: list[list[tuple[str, str, float]]] = [[] for _ in range(len(vecs))]
        for pool in self._pools():
            hits = self.searcher.vector_backend(pool).search_vectors(vecs, PER_CLUSTER)
            for row, h in zip(found, hits, strict=True):
                row += [(pool, sid, s) for sid, s in h if s >= NEAR]
        return [sorted(r, key=lambda x: -x[2])[:PER_CLUSTER] for r in found]

    def _items(self, found) -> dict[tuple[str, str], object]:
        out = {}
        for pool in self._pools():
            ids = sorted({sid for near in found for p, sid, _ in near if p == pool})
            if ids:
                out.update(
                    {(pool, k): v for k, v in self.searcher.store(pool).get_many(ids).items()}
                )
        return out

    def _within_budget(self, pairs, items, texts):
        """The pairs, less those over `BUDGET` that would be judged for the first time (kept in
        the order found: each cluster's nearest first)."""
        known = self.arguing.known(texts, [(mid, items[(p, s)].text) for _, mid, p, s in pairs])
        out, new = [], 0
        for pair, k in zip(pairs, known, strict=True):
            if not k:
                if new >= BUDGET:
                    continue
                new += 1
            out.append(pair)
        return out

    def _stored_states(self, pairs, items) -> dict[str, np.ndarray]:
        """Lower states stored with the documents' sentences, by text (a news sentence has none:
        the argument model computes it)."""
        st = (
            self.searcher.stance_states("documents") if "documents" in self.searcher.pools else None
        )
        ids = sorted({sid for _, _, pool, sid in pairs if pool == "documents"})
        if st is None or not ids or st.key != self.arguing.model.states_key:
            return {}
        return {items[("documents", k)].text: dequantize(*v) for k, v in st.get_many(ids).items()}
