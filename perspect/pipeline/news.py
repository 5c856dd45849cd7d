"""The fifth stage: news sentences that strengthen or weaken the claim and its perspectives.

Retrieved for the claim (RRF over the news pool's retrievers: BM25 alone on a large pool, whose
vectors would cost hours to compute), gated by their dense cosine to the claim where the pool has
vectors, judged sentence -> claim by the bundle's news judge (the argument trunk's news stack,
reranker.news_judge; an older bundle's relation model or ClaimDiff comparator) under cuts fitted
for precision: most retrieved sentences bear on nothing, and then none is shown. Each kept one is
also compared with the top clusters' phrasings, to say which perspective it bears on most; and
each top sided cluster gets its own news, retrieved by its perspective's words and judged against
it (issue 73), so that a reader sees which outlets carry which point (result.Spread).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from perspect.core.datasets.negation import negate
from perspect.core.result import NewsItem, PerspectiveCluster
from perspect.core.types import Hit
from perspect.reranker.comparator import Comparator, Relation
from perspect.retriever.searcher import Searcher

_VERB = {"strengthen": "strengthens", "weaken": "weakens"}
_FLIP = {"strengthens": "weakens", "weakens": "strengthens"}


@dataclass(frozen=True)
class Judged:
    """The sentences kept for a claim, with their relation to it, and each one's copies' ids."""

    kept: list[tuple[Hit, Relation]]
    also: dict[str, tuple[str, ...]]


class News:
    def __init__(
        self,
        searcher: Searcher,
        comparator: Comparator | None,
        candidates: int,
        depth: int,
        rrf_k: int,
        most: int,
        min_similarity: float,
        per_cluster: int = 0,
        per_cluster_most: int = 2,
    ):
        self.searcher = searcher
        self.comparator = comparator
        self.candidates = candidates  # sentences retrieved for the claim
        self.depth = depth  # each retriever's depth before RRF
        self.rrf_k = rrf_k
        self.most = most  # sentences shown at most
        self.min_similarity = min_similarity  # EngineConfig.news_min_similarity
        self.per_cluster = per_cluster  # sentences retrieved for each top cluster's perspective
        self.per_cluster_most = per_cluster_most  # of those, shown under it at most

    @property
    def active(self) -> bool:
        """A comparator and a news pool: the stage runs (on an empty pool it finds nothing)."""
        return self.comparator is not None and "news" in self.searcher.pools

    def __call__(self, claim: str, clusters: Sequence[PerspectiveCluster]) -> list[NewsItem]:
        return self.with_clusters(self.about_claim(claim), clusters)

    def _retrieve(self, query: str, k: int) -> tuple[tuple[Hit, ...], Any]:
        """The top `k` news sentences a reader can judge alone (a headline fragment, a byline,
        a question: "Collapse A city without cars?" is not news that argues anything), gated by their
        dense cosine to the query where the pool has vectors."""
        got = self.searcher.hybrid(query, "news", k, self.depth, self.rrf_k)
        hits = tuple(h for h in got.hits.hits if _readable(h.text))
        qv, vectors = got.vector, self.searcher.vector_backend("news")
        if hits and qv is not None and vectors is not None:
            cos = vectors.vectors([h.id for h in hits]) @ qv
            hits = tuple(h for h, c in zip(hits, cos, strict=True) if c >= self.min_similarity)
        return hits, got

    def about_claim(self, claim: str) -> Judged:
        """The news sentences retrieved for `claim`, each with its relation to it: what needs no
        cluster, so a search runs it while its clusters form."""
        cmp = self.comparator
        if cmp is None or not self.searcher.pools.get("news"):
            return Judged([], {})
        hits, _ = self._retrieve(claim, self.candidates)
        if not hits:
            return Judged([], {})
        hits, also = _once(hits)
        # the negation rule where the judge was trained to read negation (the relation model);
        # the ClaimDiff comparator was not, and reads a claim and its negation alike
        if getattr(cmp, "reads_negation", False):
            rel = one_sided(cmp, [h.text for h in hits], claim)
        else:
            rel = cmp.compare([(h.text, claim) for h in hits], setting="doc")
        kept = [(h, r) for h, r in zip(hits, rel, strict=True) if r.relation != "neither"]
        kept.sort(key=lambda x: -_p(x[1]))
        return Judged(kept[: self.most], also)

    def with_clusters(self, judged: Judged, clusters: Sequence[PerspectiveCluster]):
        """The news items of `judged` sentences, each tied to the top cluster it bears on most,
        and under each top cluster the news retrieved for its own perspective that strengthens or
        weakens it (`per_cluster`): a perspective's news is found by its words, not only the
        claim's."""
        cmp, kept, also = self.comparator, judged.kept, dict(judged.also)
        if cmp is None:
            return []
        reps = [c.representative for c in clusters]
        per = len(reps)
        against = (
            cmp.compare([(h.text, m.text) for h, _ in kept for m in reps], setting="doc")
            if per and kept
            else []
        )
        out = []
        for i, (h, r) in enumerate(kept):
            mine = against[i * per : (i + 1) * per]
            best = max(range(per), key=lambda j: _p(mine[j]), default=None)
            related = best is not None and mine[best].relation != "neither"
            out.append(
                NewsItem(
                    h.id,
                    h.text,
                    _VERB[r.relation],
                    _p(r),
                    r.rationale,
                    reps[best].id if related else None,
                    _VERB[mine[best].relation] if related else None,
                    _p(mine[best]) if related else 0.0,
                    h.metadata,
                    also[h.id],
                )
            )
        if self.per_cluster and self.searcher.pools.get("news"):
            out += self._per_cluster(clusters, {h.text.casefold() for h, _ in kept}, also)
        return out

    def _per_cluster(self, clusters, seen: set[str], also: dict) -> list[NewsItem]:
        """Each top cluster's own news: retrieved by its perspective's words, judged against the
        perspective; the relation to the claim follows from the cluster's side (strengthening an
        oppose perspective weakens the claim; an unclear cluster's says nothing of the claim)."""
        cmp = self.comparator
        asked: list[tuple[PerspectiveCluster, Hit]] = []
        for c in clusters:
            if c.stance not in ("support", "oppose"):  # its news would say nothing of the claim
                continue
            hits, _ = self._retrieve(c.representative.text, self.per_cluster)
            hits, copies = _once(hits)
            for h in hits:
                if h.text.casefold() not in seen:
                    seen.add(h.text.casefold())
                    also[h.id] = copies[h.id]
                    asked.append((c, h))
        rel = cmp.compare([(h.text, c.representative.text) for c, h in asked], setting="doc")
        shown: dict[str, list[NewsItem]] = {}
        for (c, h), r in sorted(zip(asked, rel, strict=True), key=lambda x: -_p(x[1])):
            mine = shown.setdefault(c.representative.id, [])
            if r.relation == "neither" or len(mine) >= self.per_cluster_most:
                continue
            verb = _VERB[r.relation]
            to_claim = verb if c.stance != "oppose" else _FLIP[verb]
            mine.append(
                NewsItem(
                    h.id,
                    h.text,
                    to_claim,
                    _p(r),
                    r.rationale,
                    c.representative.id,
                    verb,
                    _p(r),
                    h.metadata,
                    also[h.id],
                )
            )
        return [n for c in clusters for n in shown.get(c.representative.id, ())]


MIN_WORDS = 6


def _readable(text: str) -> bool:
    """A sentence that can argue: some words, and not a question (a question asserts nothing,
    and judges never read one as strengthening or weakening a claim)."""
    return len(text.split()) >= MIN_WORDS and not text.rstrip(" \"'”’)").endswith("?")


def one_sided(judge, sentences: Sequence[str], claim: str) -> list[Relation]:
    """Each sentence's relation to `claim` ("doc" cuts), kept only where the sentence bears that
    relation to the claim more than to the claim's negation: a sentence cannot strengthen (or
    weaken) a claim and its negation (issue 41 saw one shown as strengthening both). Where the
    model reads both alike, the sentence only shares the topic and is not shown."""
    rel = judge.compare([(s, claim) for s in sentences], setting="doc")
    flipped = judge.compare([(s, negate(claim)) for s in sentences], setting="doc")
    out = []
    for r, n in zip(rel, flipped, strict=True):
        if r.relation != "neither" and _of(n, r.relation) >= _of(r, r.relation):
            r = replace(r, relation="neither")
        out.append(r)
    return out


def _of(r: Relation, relation: str) -> float:
    return r.strengthen if relation == "strengthen" else r.weaken


def _p(r: Relation) -> float:
    """P(the relation decided), or the larger of the two for "neither"."""
    if r.relation == "strengthen":
        return r.strengthen
    if r.relation == "weaken":
        return r.weaken
    return max(r.strengthen, r.weaken)


def _once(hits: Sequence[Hit]) -> tuple[tuple[Hit, ...], dict[str, tuple[str, ...]]]:
    """One hit per wording (case aside; the index stored them NFC with single spaces), the
    best-ranked, with the ids of its copies: one wire sentence in eight outlets is one piece of
    news, and judging it once is cheaper."""
    first: dict[str, Hit] = {}
    copies: dict[str, list[str]] = {}
    for h in hits:
        key = h.text.casefold()
        if key in first:
            copies[first[key].id].append(h.id)
        else:
            first[key] = h
            copies[h.id] = []
    return tuple(first.values()), {k: tuple(v) for k, v in copies.items()}
