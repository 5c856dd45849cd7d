"""The search pipeline: retrieve, judge, merge, substantiate, order.

1. Hybrid retrieval (BM25 + ColBERT, RRF) of candidate perspectives.
2. Relevance and stance from *one* forward pass of the shared cross-encoder; dev-tuned thresholds.
3. Claim-conditioned equivalence: a cheap lexical filter (same side, overlapping stems) proposes
   pairs, the equivalence head decides, union-find merges; the most relevant phrasing represents.
4. Evidence: BM25 paragraphs for claim + representative, judged by the evidence head in one batch.
5. Ordering for diversity: sides interleaved, strongest and best-substantiated first; coverage
   summary with a warning when one side is thin or empty.
Progress goes to a callback (the TUI's worker) and a `threading.Event` cancels between stages.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from perspect.errors import PerspectError
from perspect.result import Coverage, EvidenceItem, Member, PerspectiveCluster, SearchResult
from perspect.types import validate_claim
from reranker.model import PairModel
from reranker.roles import pair_for
from retriever.searcher import Searcher

ProgressCallback = Callable[[str, float], None]  # (stage description, fraction done 0..1)


class Cancelled(PerspectError):
    """The caller cancelled the search."""


@dataclass(frozen=True)
class EngineConfig:
    candidates: int = 30
    max_clusters: int = 16
    evidence_clusters: int = 8  # clusters that get evidence (the top ones)
    evidence_candidates: int = 2  # paragraphs judged per cluster
    min_overlap: float = 0.2  # stem Jaccard for an equivalence candidate pair
    thin_side: float = 0.25  # warn when a side has less than this share of clusters
    quantize: bool = False  # int8 dynamic quantization of the cross-encoder (see bench/latency.py)


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


class Engine:
    def __init__(self, searcher: Searcher, model: PairModel, config: EngineConfig | None = None):
        self.searcher = searcher
        self.config = config or EngineConfig()
        self.model = model.quantized() if self.config.quantize else model
        self._bm25 = None

    def _stems(self, text: str) -> set[str]:
        if self._bm25 is None:
            self._bm25 = self.searcher.backend("perspectives", "bm25")
        return set(self._bm25.tokens(text))

    def search(
        self,
        claim: str,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> SearchResult:
        claim = validate_claim(claim)
        cfg = self.config
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        report = progress or (lambda stage, frac: None)

        def step(name: str, frac: float, started: float) -> float:
            timings[name] = (time.perf_counter() - started) * 1000
            if cancel is not None and cancel.is_set():
                raise Cancelled("search cancelled")
            report(name, frac)
            return time.perf_counter()

        t = time.perf_counter()
        report("retrieving perspectives", 0.0)
        hits = self.searcher.search(claim, "perspectives", cfg.candidates).hits
        t = step("retrieve", 0.15, t)

        rel, sup = np.zeros(0), np.zeros(0)
        if hits:
            out = self.model.predict(
                [pair_for("relevance", claim, h.text) for h in hits], ["relevance", "stance"]
            )
            rel, sup = out["relevance"], out["stance"]
        keep = [i for i in np.argsort(-rel) if rel[i] >= self.model.threshold("relevance")]
        members = [
            Member(hits[i].id, hits[i].text, float(rel[i]), float(sup[i]), hits[i].metadata)
            for i in keep
        ]
        t = step("relevance+stance", 0.45, t)

        clusters = self._cluster(claim, members)
        t = step("equivalence", 0.7, t)

        clusters = self._with_evidence(claim, clusters[: cfg.max_clusters])
        t = step("evidence", 0.95, t)

        ordered = _interleave(clusters)
        n_sup = sum(1 for c in ordered if c.stance == "support")
        n_opp = len(ordered) - n_sup
        report("done", 1.0)
        return SearchResult(
            claim=claim,
            clusters=tuple(ordered),
            coverage=_coverage(n_sup, n_opp, cfg.thin_side),
            hits=tuple(hits),
            took_ms=(time.perf_counter() - t0) * 1000,
            timings_ms=timings,
        )

    def _cluster(self, claim: str, members: list[Member]) -> list[PerspectiveCluster]:
        if not members:
            return []
        side = ["support" if m.support >= 0.5 else "oppose" for m in members]
        stems = [self._stems(m.text) for m in members]
        pairs = []
        for i in range(len(members)):
            for j in range(i + 1, len(members)):
                if side[i] != side[j] or not stems[i] or not stems[j]:
                    continue
                overlap = len(stems[i] & stems[j]) / len(stems[i] | stems[j])
                if overlap >= self.config.min_overlap:
                    pairs.append((i, j))
        uf = _UnionFind(len(members))
        if pairs:
            probs = self.model.predict(
                [
                    pair_for("equivalence", claim, members[i].text, members[j].text)
                    for i, j in pairs
                ],
                ["equivalence"],
            )["equivalence"]
            thr = self.model.threshold("equivalence")
            for (i, j), p in zip(pairs, probs, strict=True):
                if p >= thr:
                    uf.union(i, j)
        groups: dict[int, list[int]] = {}
        for i in range(len(members)):
            groups.setdefault(uf.find(i), []).append(i)
        out = []
        for idx in groups.values():
            ms = sorted((members[i] for i in idx), key=lambda m: -m.relevance)
            stance = side[idx[0]]
            strength = float(
                np.mean([m.support if stance == "support" else 1 - m.support for m in ms])
            )
            score = ms[0].relevance * strength
            out.append(PerspectiveCluster(ms[0], tuple(ms), stance, strength, score))
        return sorted(out, key=lambda c: -c.score)

    def _with_evidence(
        self, claim: str, clusters: list[PerspectiveCluster]
    ) -> list[PerspectiveCluster]:
        cfg = self.config
        if "evidence" not in self.searcher.pools or "evidence" not in self.model.manifest["tasks"]:
            return clusters
        jobs = []  # (cluster index, item)
        for ci, c in enumerate(clusters[: cfg.evidence_clusters]):
            q = f"{claim} {c.representative.text}"
            for h in self.searcher.search(
                q, "evidence", cfg.evidence_candidates, retriever="bm25"
            ).hits:
                jobs.append((ci, h))
        if not jobs:
            return clusters
        probs = self.model.predict(
            [
                pair_for("evidence", claim, clusters[ci].representative.text, h.text)
                for ci, h in jobs
            ],
            ["evidence"],
        )["evidence"]
        thr = self.model.threshold("evidence")
        found: dict[int, list[EvidenceItem]] = {}
        for (ci, h), p in zip(jobs, probs, strict=True):
            found.setdefault(ci, []).append(
                EvidenceItem(
                    h.id, h.text, float(p), "supports" if p >= thr else "unverified", h.metadata
                )
            )
        out = []
        for ci, c in enumerate(clusters):
            ev = tuple(sorted(found.get(ci, []), key=lambda e: -e.score))
            best = max((e.score for e in ev), default=0.0)
            score = c.score * (0.75 + 0.25 * best)  # substantiated perspectives rank higher
            out.append(
                PerspectiveCluster(c.representative, c.members, c.stance, c.strength, score, ev)
            )
        return sorted(out, key=lambda c: -c.score)


def _interleave(clusters: list[PerspectiveCluster]) -> list[PerspectiveCluster]:
    """Alternate sides, strongest first on each, so neither side is buried below the other."""
    sup = [c for c in clusters if c.stance == "support"]
    opp = [c for c in clusters if c.stance == "oppose"]
    out: list[PerspectiveCluster] = []
    while sup or opp:
        first, second = (
            (sup, opp) if (sup and (not opp or sup[0].score >= opp[0].score)) else (opp, sup)
        )
        out.append(first.pop(0))
        if second:
            out.append(second.pop(0))
    return out


def _coverage(n_sup: int, n_opp: int, thin: float) -> Coverage:
    total = n_sup + n_opp
    warning = None
    if total == 0:
        warning = "no perspective passed the relevance threshold"
    elif n_sup == 0 or n_opp == 0:
        empty = "supporting" if n_sup == 0 else "opposing"
        warning = f"no {empty} perspective found: the index may be one-sided on this claim"
    elif min(n_sup, n_opp) / total < thin:
        thin_side = "supporting" if n_sup < n_opp else "opposing"
        warning = f"few {thin_side} perspectives ({min(n_sup, n_opp)} of {total})"
    return Coverage(n_sup, n_opp, warning)
