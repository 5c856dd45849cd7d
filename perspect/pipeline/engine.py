"""The search pipeline: retrieve, judge, merge, substantiate, order.

1. Hybrid retrieval (BM25 + dense + ColBERT, RRF) of candidate perspectives; the claim is encoded
   once for the dense retriever and its vector reused below.
2. Relevance and stance from *one* forward pass of the shared cross-encoder; relevance is stacked
   with the bi-encoder cosine, the fused rank and the fused RRF score when the model's manifest
   has that stack.
3. Equivalence: a stack over *stored* perspective vectors (no forward pass): their cosine, their
   cosine with the claim's direction removed, stance agreement and the overlap of the words each
   adds to the claim (`equivalence_features`), calibrated on held-out train claims; kept
   perspectives are merged by complete-link agglomeration (`may_merge`: across sides unless
   their stances clearly differ), the most relevant phrasing represents and the members' mean
   stance gives the cluster's side.
   Measured on dev it beats the trained claim-conditioned head (T3 F1 62.7 vs 35.1), which remains
   the fallback for indexes without dense vectors. When the model names a dedicated equivalence
   cross-encoder (reranker.equivalence_ce), its score is one more feature, computed only for the
   pairs it could merge (`ce_needed`).
4. Evidence: a lookup of the perspective -> evidence links precomputed at index time
   (indexer.links); nothing is retrieved or encoded at query time. A stack scores each link from
   its fused score and cosine, and links close to the best one are marked as backing it.
5. Ordering for diversity: sides interleaved, strongest and best-substantiated first; coverage
   summary with a warning when one side is thin or empty.
Progress goes to a callback (the TUI's worker) and a `threading.Event` cancels between stages.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from perspect.core.decisions import Decisions
from perspect.core.errors import Cancelled, ModelError, PerspectError
from perspect.core.links import RRF_K, Link
from perspect.core.result import (
    Coverage,
    EvidenceItem,
    Member,
    NewsItem,
    PerspectiveCluster,
    SearchResult,
)
from perspect.core.stack import Stack, logit
from perspect.core.types import Hit, Query, validate_claim
from perspect.reranker.comparator import Comparator, Relation
from perspect.reranker.equivalence_ce import load_for
from perspect.reranker.model import PairModel
from perspect.reranker.roles import pair_for
from perspect.retriever.base import VectorBackend
from perspect.retriever.fusion import rrf
from perspect.retriever.searcher import MAX_K, Searcher

ProgressCallback = Callable[[str, float], None]  # (stage description, fraction done 0..1)


@dataclass(frozen=True)
class EngineConfig:
    candidates: int = 30
    fusion_depth: int = 100  # each retriever's depth before RRF
    rrf_k: int = 60
    max_clusters: int = 16
    evidence_clusters: int = 16  # clusters that get evidence (a lookup: cheap)
    evidence_per_cluster: int = 3  # paragraphs shown per cluster
    min_overlap: float = 0.2  # stem Jaccard for an equivalence candidate pair
    thin_side: float = 0.25  # warn when a side has less than this share of clusters
    # int8 cross-encoders (bench/latency.py): ONNX Runtime's per-channel copies of their graphs
    # (runtime "onnx"), PyTorch's dynamic int8 (runtime "torch")
    quantize: bool = False
    # the equivalence cross-encoder's own choice (None: as `quantize`): its int8 scores correlate
    # .70 with fp32 (160 pairs) and cost T3 over clusters 1.5, where the pair model's cost nothing
    quantize_equivalence: bool | None = None
    # The models' runtime. "onnx": every model of the query path is served from its exported
    # graph by ONNX Runtime with a `tokenizers` tokenizer, so a new process imports neither
    # transformers nor (but for PLAID) torch: a cold search 3.6 s instead of 10 (README,
    # "Latency"). "torch": the PyTorch models.
    runtime: str = "onnx"
    # At most this many pairs per search go through the equivalence cross-encoder (those with the
    # highest bound first; the rest count as its lowest score, 0). None: every pair that
    # could merge, the clusters `perspect eval` measures. Measured offline on dev gold
    # perspectives (both orders, margin .6), T3 over clusters: all 70.0 (p95 571 pairs per
    # claim), 96: 68.0, 48: 66.9, 32: 65.6. Shipped bundle (perspect eval --index default
    # --quantize --equivalence-max-pairs N), T3 pairs / clusters with ONNX Runtime's per-channel
    # int8: all 63.65 / 68.82, 48: 63.97 / 67.65, 24: 60.68 / 65.93 (fp32, all: 63.03 / 69.29);
    # PyTorch's per-tensor int8 (runtime "torch") cost more: all 62.3 / 67.8, 24: 60.5 / 65.4.
    equivalence_ce_max_pairs: int | None = None
    # news (an index with a news pool and a comparator): sentences retrieved for the claim and
    # compared sentence -> claim; those related are compared with the top clusters too
    news_candidates: int = 16
    news_max: int = 8
    news_clusters: int = 6
    # relatedness gate before the comparator: cosine of the dense vectors (sentence, claim). The
    # comparator never saw pairs from different stories and calls some of them "strengthen". On
    # make demo's index (ClaimDiff's 186 articles), the top sentences of the claim's own story
    # score .52-.63 (impeachment, vaccines) and those of other stories .29-.46 (claims on
    # animal rights or the minimum wage, which no article covers): .5 lets the first through.
    # Sentence-sentence pairs (perspect compare) are gated lower: see CompareConfig.
    news_min_similarity: float = 0.5


FAST_EQUIVALENCE_PAIRS = 24


def fast_config(**overrides) -> EngineConfig:
    """Interactive speed on a small CPU, for a measured cost in T3 (README, "Latency"): int8
    cross-encoders and at most `FAST_EQUIVALENCE_PAIRS` pairs through the equivalence
    cross-encoder. `perspect search --fast`, `perspect tui --fast`, `Perspect.open(fast=True)`."""
    return EngineConfig(
        **{"quantize": True, "equivalence_ce_max_pairs": FAST_EQUIVALENCE_PAIRS, **overrides}
    )


def check_k(k: int | None, default: int) -> int:
    """A caller's cluster count: None means the default; anything else must be 1..MAX_K."""
    if k is None:
        return default
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise PerspectError(f"k must be a whole number between 1 and {MAX_K}, got {k!r}")
    return k


class Engine:
    def __init__(
        self,
        searcher: Searcher,
        model: PairModel,
        config: EngineConfig | None = None,
        decisions: Decisions | None = None,
        comparator: Comparator | None = None,
    ):
        """`decisions`: the fitted cuts and stacks; by default those saved with the model.
        `comparator`: the ClaimDiff model that ties news sentences to the claim (None: no news)."""
        self.searcher = searcher
        self.config = config or EngineConfig()
        onnx = self.config.runtime == "onnx"
        q = self.config.quantize
        # int8: ONNX Runtime's per-channel copy of the graph; PyTorch's int8 on runtime "torch"
        # or where no graph can be made
        if onnx:
            model = model.for_inference(int8=q)
        elif model.net is None:  # a model served by ONNX Runtime, asked for PyTorch
            model = PairModel.load(model.origin)
        self.model = model.quantized() if q and not model.manifest.get("quantized") else model
        self.decisions = decisions or Decisions.from_manifest(model.manifest)
        q_eq = self.config.quantize_equivalence
        q_eq = q if q_eq is None else q_eq
        ce = load_for(model.manifest, model.origin, serving=onnx, int8=q_eq)
        if ce is not None and onnx:
            ce = ce.for_inference(int8=q_eq)
        if ce is not None and q_eq and not ce.manifest.get("quantized"):
            ce = ce.quantized()
        self.equivalence_ce = ce
        if comparator is not None and onnx:
            comparator = comparator.for_inference()
        self.comparator = comparator
        eq = self.decisions.stack("equivalence")
        if eq is not None and "ce" in eq.features and not self.equivalence_ce:
            raise ModelError(
                "the model's equivalence stack reads an equivalence cross-encoder its manifest "
                "does not name",
                hint="perspect train --task calibrate --equivalence-model models/equivalence",
            )

    # -- stages, also used one by one by `perspect eval perspectrum` -----------------------------
    @property
    def dense(self) -> VectorBackend | None:
        """The perspective pool's stored vectors (a `VectorBackend`), or None."""
        return self.searcher.vector_backend("perspectives")

    def candidates(self, claim: str, k: int | None = None) -> tuple[tuple[Hit, ...], Query]:
        """Hybrid candidates (RRF over every retriever of the index) and the claim as a `Query`:
        its dense vector, encoded once for dense retrieval, serves every cosine feature below."""
        t0 = time.perf_counter()
        k = k or self.config.candidates
        runs, qv = self.searcher.runs(claim, "perspectives", max(k, self.config.fusion_depth))
        scored = rrf(runs, k=self.config.rrf_k, limit=k)
        kind = self.searcher.default_retriever
        hits = self.searcher.hits(claim, "perspectives", kind, scored, t0).hits
        return hits, self.query(claim, qv)

    def query(self, claim: str, vector=None) -> Query:
        """The claim with its stems, and its dense vector when given (or, with `vector=True`,
        encoded now where the index has dense vectors)."""
        if vector is True:
            vector = self.dense.embed_queries([claim])[0] if self.dense is not None else None
        stems = self._stems(claim) if "bm25" in self.searcher.retrievers else set()
        return Query(claim, vector, frozenset(stems))

    def judge(self, query: Query, hits: Sequence[Hit]) -> dict[str, np.ndarray]:
        """Relevance and stance from one forward pass; with a relevance stack in the model's
        manifest, relevance combines the head with the bi-encoder cosine and the fused rank."""
        if not hits:
            z = np.zeros(0)
            return {"relevance": z, "stance": z, "head": z}
        out = self.model.predict(
            [pair_for("relevance", query.text, h.text) for h in hits], ["relevance", "stance"]
        )
        rel = out["relevance"]
        st = self.decisions.stack("relevance")
        if st is not None:
            rel = st.prob(self.relevance_features(hits, query, out["relevance"]))
        return {"relevance": rel, "stance": out["stance"], "head": out["relevance"]}

    def relevance_features(self, hits, query: Query, head: np.ndarray) -> dict[str, np.ndarray]:
        """The relevance stack's inputs: the head's logit, the bi-encoder cosine, the fused rank
        and the fused RRF score (times k): how many retrievers ranked the candidate, and how high.
        Adding `rrf` to the first three: tune-claim T1 52.9 -> 54.6, dev 54.3 -> 56.1."""
        cos = np.zeros(len(hits))
        if query.vector is not None and self.dense is not None:
            cos = self.dense.vectors([h.id for h in hits]) @ query.vector
        return {
            "head": logit(head),
            "cosine": cos,
            "log_rank": np.log(np.arange(1, len(hits) + 1)),
            "rrf": np.array([h.score for h in hits], dtype=np.float64) * self.config.rrf_k,
        }

    def relevance_threshold(self) -> float:
        return self.decisions.relevance

    def equivalence(
        self,
        query: Query,
        ids: Sequence[str],
        texts: Sequence[str],
        support: Sequence[float] | None = None,
        allowed: np.ndarray | None = None,
    ) -> np.ndarray:
        """P(same point) for every pair (n x n). With stored vectors and a cosine stack: the
        stack's features (see `equivalence_features`); the query's vector is encoded here
        when it has none. When the stack reads the equivalence cross-encoder, only the pairs
        that could merge are run through it (`ce_needed`; `allowed`, from `may_merge`, rules out
        pairs that may not merge); the others are returned as if it had scored 0 (which keeps a
        pair `ce_needed` rules out below the cluster cut), so they are not estimates. Otherwise
        the equivalence head on pairs a lexical filter (overlapping stems) proposes; other pairs
        get 0."""
        n = len(ids)
        probs = np.zeros((n, n))
        st = self.decisions.stack("equivalence")
        if st is not None and self.dense is not None and n:
            iu = np.triu_indices(n, 1)
            if query.vector is None and "resid" in st.features:
                query = self.query(query.text, vector=True)
            stems = self.point_stems(query, texts) if "jacc" in st.features else None
            vectors = self.dense.vectors(list(ids))
            feats = equivalence_features(vectors, support, iu, query.vector, stems)
            if "ce" in st.features:
                need = self.ce_pairs(feats, None if allowed is None else allowed[iu])
                feats["ce"] = np.zeros(len(iu[0]))
                pairs = [(texts[a], texts[b]) for a, b in zip(*(x[need] for x in iu), strict=True)]
                sub = {k: v[need] for k, v in feats.items() if k != "ce"}
                feats["ce"][need] = self._ce_scores(query.text, pairs, st, sub)
            probs[iu] = st.prob(feats)
            return probs + probs.T
        stems = [self._stems(t) for t in texts]
        pairs = [
            (i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if stems[i]
            and stems[j]
            and len(stems[i] & stems[j]) / len(stems[i] | stems[j]) >= self.config.min_overlap
        ]
        if pairs:
            got = self.model.predict(
                [pair_for("equivalence", query.text, texts[i], texts[j]) for i, j in pairs],
                ["equivalence"],
            )["equivalence"]
            for (i, j), p in zip(pairs, got, strict=True):
                probs[i, j] = probs[j, i] = p
        return probs

    def ce_pairs(self, feats: dict[str, np.ndarray], allowed: np.ndarray | None) -> np.ndarray:
        """Which pairs go through the equivalence cross-encoder: those it could merge
        (`ce_needed`) and `allowed` (may_merge), at most `equivalence_ce_max_pairs` of them
        (the highest bounds). `perspect eval` applies the same selection to T3."""
        st = self.decisions.stack("equivalence")
        need = ce_needed(st, feats, self.cluster_cut())
        if allowed is not None:
            need &= allowed
        return _at_most(need, st, feats, self.config.equivalence_ce_max_pairs)

    def _ce_scores(self, claim: str, pairs, stack: Stack, feats: dict[str, np.ndarray]):
        """The cross-encoder's scores of `pairs`. With both orders, the reverse pass runs only
        for the pairs that could still reach the cluster cut: after one order the mean lies in
        [s/2, s/2 + 1/2], and where the stack stays below the cut across that range the pair
        cannot merge whatever the reverse says; it keeps s/2 (as if the reverse scored 0). So the
        clusters are exactly those of scoring both orders (tests/test_equivalence_ce.py)."""
        ce = self.equivalence_ce
        if ce.orders == 1 or not pairs:
            return ce.predict(claim, pairs)
        lo = ce.one_order(claim, pairs) / 2
        could = ce_needed(stack, feats, self.cluster_cut(), lo=lo, hi=lo + 0.5)
        if could.any():
            rev = ce.one_order(claim, [x for x, c in zip(pairs, could, strict=True) if c], True)
            lo[could] += rev / 2
        return lo

    def equivalence_threshold(self) -> float:
        d = self.decisions
        return d.equivalence if self.dense is not None else d.equivalence_head

    def cluster_cut(self) -> float:
        """The complete-link cut, tuned for clusters on held-out claims."""
        return self.decisions.cluster_cut(with_vectors=self.dense is not None)

    def evidence(self, groups: Sequence[Sequence[str]]) -> list[list[EvidenceItem]]:
        """Evidence for each group of equivalent perspective ids (representative first), from
        the links precomputed at index time (indexer.links): the representative's links, or the
        next member's when it has none. Each link is scored (`link_scores`) and the links close to
        the best one are marked "supports" (`backed_links`); the others are "related". (Fusing all
        members' links was measured too: T4 F1 38.3 vs 39.5 for the representative's on the tune
        claims.)"""
        chosen, items = self.group_links(groups)
        rule = self.decisions.evidence_rule
        out = []
        for links in chosen:
            scores, order, backed = ranked_links(links, self.decisions.stack("evidence"), rule)
            out.append(
                [
                    EvidenceItem(
                        links[i].evidence_id,
                        items[links[i].evidence_id].text,
                        float(scores[i]),
                        "supports" if rank in backed else "related",
                        items[links[i].evidence_id].metadata,
                    )
                    for rank, i in enumerate(order)
                ]
            )
        return out

    def group_links(self, groups: Sequence[Sequence[str]]):
        """Each group's links (with their reverse margins) in stored
        order, and the linked paragraphs by id (links to paragraphs deleted since are dropped)."""
        if "evidence" not in self.searcher.pools or not groups:
            return [[] for _ in groups], {}
        got = self._links(sorted({p for g in groups for p in g}))
        chosen = [
            next((got[p] for p in g if got.get(p)), [])[: self.config.evidence_per_cluster]
            for g in groups
        ]
        store = self.searcher.store("evidence")
        items = store.get_many(sorted({x.evidence_id for c in chosen for x in c}))
        chosen = [[x for x in c if x.evidence_id in items] for c in chosen]
        return self._with_reverse_margins(groups, chosen), items

    def _with_reverse_margins(self, groups, chosen: list[list[Link]]) -> list[list[Link]]:
        """Add to each link how much closer the paragraph is to the linked perspective than to
        any perspective of the pool outside its group (`link_features`, "rmargin"). On the debate
        sites each paragraph was written under one perspective, so a paragraph that another
        perspective matches better is likely that one's. Measured on the tune / dev claims (3
        links, stack re-fitted, rule re-tuned): T4 50.1 / 50.7 without it, 51.0 / 52.1 with it;
        not masking the group's other phrasings 50.6 / 52.0; the rank instead of the margin 50.3
        / 51.3. Computed per search, not stored: adding perspectives changes it. 0 without
        dense vectors."""
        eids = sorted({x.evidence_id for c in chosen for x in c})
        if not eids or self.dense is None:
            return [[replace(x, rmargin=0.0) for x in c] for c in chosen]
        ev = self.searcher.vector_backend("evidence").vectors(eids)
        k = 1 + max(len(g) for g, c in zip(groups, chosen, strict=True) if c)
        near = dict(zip(eids, self.dense.search_vectors(ev, k), strict=True))
        out = []
        for g, c in zip(groups, chosen, strict=True):
            members = set(g)
            other = [next((s for p, s in near[x.evidence_id] if p not in members), -1.0) for x in c]
            out.append([replace(x, rmargin=x.cosine - o) for x, o in zip(c, other, strict=True)])
        return out

    def _links(self, pids: list[str]) -> dict[str, list[Link]]:
        """Precomputed links, or (an index built without them) the same computation on the fly."""
        links = self.searcher.links()
        if links is not None:
            return links.get(pids)
        from perspect.indexer.links import compute

        ev: dict = {}
        if "bm25" in self.searcher.retrievers:
            ev["bm25"] = self.searcher.backend("evidence", "bm25")
        if (vectors := self.searcher.vector_backend("evidence")) is not None:
            ev["dense"] = vectors
        texts = self.searcher.store("perspectives").get_many(pids)
        items = [(p, texts[p].text) for p in pids if p in texts]
        vecs = self.dense.vectors([p for p, _ in items]) if self.dense is not None else None
        return dict(compute(items, ev, vecs))

    def point_stems(self, query: Query, texts: Sequence[str]) -> list[set[str]]:
        """Each perspective's stems less the claim's: the words that carry its own point."""
        return [self._stems(t) - query.stems for t in texts]

    def _stems(self, text: str) -> set[str]:
        return set(self.searcher.backend("perspectives", "bm25").tokens(text))

    # -- the whole search --------------------------------------------------------------------------
    def search(
        self,
        claim: str,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
        k: int | None = None,
    ) -> SearchResult:
        """`k`: at most this many perspective clusters (default `EngineConfig.max_clusters`). The
        whole search reads one version of the index (a write published meanwhile is seen by the
        next search)."""
        claim = validate_claim(claim)
        with self.searcher.pinned():
            return self._search(claim, progress, cancel, k)

    def _search(self, claim, progress, cancel, k) -> SearchResult:
        cfg = self.config
        max_clusters = check_k(k, cfg.max_clusters)
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
        hits, query = self.candidates(claim, max(cfg.candidates, max_clusters))
        t = step("retrieve", 0.3, t)

        j = self.judge(query, hits)
        rel, sup = j["relevance"], j["stance"]
        keep = [i for i in np.argsort(-rel, kind="stable") if rel[i] >= self.relevance_threshold()]
        members = [
            Member(hits[i].id, hits[i].text, float(rel[i]), float(sup[i]), hits[i].metadata)
            for i in keep
        ]
        t = step("relevance+stance", 0.8, t)

        clusters = self._cluster(query, members)[:max_clusters]
        t = step("equivalence", 0.9, t)

        clusters = self._with_evidence(clusters)
        t = step("evidence", 0.95, t)

        news = self.news(claim, clusters[: cfg.news_clusters])
        if self.comparator is not None and "news" in self.searcher.pools:
            t = step("news", 0.98, t)

        ordered = _interleave(clusters)
        n_sup = sum(1 for c in ordered if c.stance == "support")
        n_opp = len(ordered) - n_sup
        report("done", 1.0)
        coverage = _coverage(n_sup, n_opp, cfg.thin_side)
        mismatch = retriever_mismatch(self.model.manifest, self.searcher.retrievers)
        if mismatch:
            note = "; ".join(x for x in (coverage.warning, mismatch) if x)
            coverage = Coverage(coverage.support, coverage.oppose, note)
        return SearchResult(
            claim=claim,
            clusters=tuple(ordered),
            coverage=coverage,
            hits=tuple(hits),
            took_ms=(time.perf_counter() - t0) * 1000,
            timings_ms=timings,
            news=tuple(news),
        )

    def news(self, claim: str, clusters: Sequence[PerspectiveCluster]) -> list[NewsItem]:
        """News sentences that strengthen or weaken the claim, strongest first: retrieved (RRF
        over the index's retrievers), then judged sentence -> claim by the comparator under its
        thresholds for document-like streams (most retrieved sentences bear on nothing, and
        then none is shown). Each kept one is also compared with the top clusters' phrasings."""
        cmp = self.comparator
        if cmp is None or not self.searcher.pools.get("news"):
            return []
        cfg = self.config
        runs, qv = self.searcher.runs(claim, "news", max(cfg.news_candidates, cfg.fusion_depth))
        scored = rrf(runs, k=cfg.rrf_k, limit=cfg.news_candidates)
        t0 = time.perf_counter()
        kind = self.searcher.default_retriever
        hits = self.searcher.hits(claim, "news", kind, scored, t0).hits
        vectors = self.searcher.vector_backend("news")
        if hits and qv is not None and vectors is not None:
            cos = vectors.vectors([h.id for h in hits]) @ qv
            hits = tuple(h for h, c in zip(hits, cos, strict=True) if c >= cfg.news_min_similarity)
        if not hits:
            return []
        rel = cmp.compare([(h.text, claim) for h in hits], setting="doc")
        kept = [(h, r) for h, r in zip(hits, rel, strict=True) if r.relation != "neither"]
        kept.sort(key=lambda x: -_p(x[1]))
        kept = kept[: cfg.news_max]
        reps = [c.representative for c in clusters]
        per = len(reps)
        against = (
            cmp.compare([(h.text, m.text) for h, _ in kept for m in reps], setting="doc")
            if per
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
                )
            )
        return out

    def _cluster(self, query: Query, members: list[Member]) -> list[PerspectiveCluster]:
        """Complete-link agglomeration of the kept perspectives (every pair in a cluster must pass
        the cut: single-link chaining merged 11 phrasings of different points into one cluster, and
        measured worse on the tune claims, T3-after-clustering F1 32 vs 52); the most relevant
        phrasing represents its cluster, and the members' mean P(support) gives its side."""
        if not members:
            return []
        support = np.array([m.support for m in members])
        allowed = self.decisions.may_merge(support)
        probs = self.equivalence(
            query, [m.id for m in members], [m.text for m in members], support, allowed
        )
        labels = complete_link(probs, allowed, self.cluster_cut())
        groups: dict[int, list[int]] = {}
        for i, lab in enumerate(labels):
            groups.setdefault(int(lab), []).append(i)
        out = []
        side_cut = self.decisions.stance_side
        for idx in groups.values():
            ms = sorted((members[i] for i in idx), key=lambda m: -m.relevance)
            mean = float(np.mean([m.support for m in ms]))
            stance = "support" if mean >= side_cut else "oppose"
            strength = mean if stance == "support" else 1 - mean
            score = ms[0].relevance * strength
            out.append(PerspectiveCluster(ms[0], tuple(ms), stance, strength, score))
        return sorted(out, key=lambda c: -c.score)

    def _with_evidence(self, clusters: list[PerspectiveCluster]) -> list[PerspectiveCluster]:
        n = self.config.evidence_clusters
        found = self.evidence([[m.id for m in c.members] for c in clusters[:n]])
        out = []
        for ci, c in enumerate(clusters):
            ev = tuple(found[ci]) if ci < len(found) else ()
            backed = any(e.verdict == "supports" for e in ev)
            score = c.score * (1.0 if backed else 0.85)  # substantiated perspectives rank higher
            out.append(
                PerspectiveCluster(c.representative, c.members, c.stance, c.strength, score, ev)
            )
        return sorted(out, key=lambda c: -c.score)


def link_features(links: Sequence[Link]) -> dict[str, np.ndarray]:
    """Features of a perspective's evidence links: the fused RRF score (times k: how many of the
    link retrievers found the paragraph, and how high), the bi-encoder cosine and the reverse
    margin (`Engine._with_reverse_margins`)."""
    return {
        "rrf": np.array([x.rrf for x in links], dtype=np.float64) * RRF_K,
        "cos": np.array([x.cosine for x in links], dtype=np.float64),
        "rmargin": np.array([x.rmargin for x in links], dtype=np.float64),
    }


def link_scores(links: Sequence[tuple], stack: Stack | None) -> np.ndarray:
    """P(the paragraph backs the perspective) from the evidence stack, for models whose stack has
    features; the plain cosine for models tuned before it (their cut is a cosine).
    Measured with (cut, delta, k) re-tuned for each on the tune claims, T4 F1 tune / dev:
    cosine 47.7 / 48.4; stack (rrf, cos) 48.9 / 50.1 (5 links), 50.1 / 50.7 (3 links); + reverse
    margin 51.0 / 52.1 (3 links). Adding the claim's cosine to the paragraph (48.9 / 50.0), the
    trained evidence head (48.4 / 48.4; 16 pairs/s), sentence-level cosines (max, first, best
    3-sentence window: at most +0.3 dev), the margin over the claim's other perspectives only
    (+0.3) or fusing all members' links (+0.3 dev, -0.4 tune) did not help."""
    if not links:
        return np.zeros(0)
    if stack is not None and stack.features:
        return stack.prob(link_features(links))
    return np.array([x.cosine for x in links], dtype=np.float64)


def ranked_links(links, stack: Stack | None, rule: tuple[float, float, int]):
    """A perspective's links scored (`link_scores`), their order best first (stable), and the
    ranks in that order marked as backing (`backed_links` under `rule` = (cut, delta, k)):
    what the engine shows and what T4 scores."""
    scores = link_scores(links, stack)
    order = sorted(range(len(links)), key=lambda i: -scores[i])
    return scores, order, set(backed_links([scores[i] for i in order], *rule))


def backed_links(scores: Sequence[float], cut: float, delta: float, k: int) -> list[int]:
    """Ranks of the paragraphs shown as backing a perspective, for link scores best first: among
    the first `k`, those whose score clears `cut` and is within `delta` of the top link's. A
    perspective has 1.9 gold paragraphs on average (dev), so backing only the top one caps
    recall; on the tune claims, with cosines, (cut, delta, k) = (.46, .06, 2) gave T4 F1 47.7
    against 45.3 for the top one."""
    if not len(scores):
        return []
    top = scores[0]
    return [r for r, c in enumerate(scores[:k]) if c >= cut and c >= top - delta]


def complete_link(probs: np.ndarray, allowed: np.ndarray, cut: float) -> np.ndarray:
    """Cluster labels by complete-link agglomeration: repeatedly merge the two clusters whose
    *least* similar pair is the most similar, while that pair clears `cut`; a pair that is not
    `allowed` (n x n, or a side per item: items on different sides) never shares a cluster.
    O(n^3) on the <= 30 kept perspectives of a search: negligible."""
    n = len(probs)
    allowed = np.asarray(allowed)
    if allowed.ndim == 1:
        allowed = allowed[:, None] == allowed[None, :]
    sim = np.where(allowed, probs, -np.inf).astype(np.float64)
    np.fill_diagonal(sim, np.inf)
    members = [[i] for i in range(n)]
    link = sim.copy()  # cluster x cluster: min pair similarity
    alive = list(range(n))
    while len(alive) > 1:
        sub = link[np.ix_(alive, alive)].copy()
        np.fill_diagonal(sub, -np.inf)
        a, b = np.unravel_index(int(np.argmax(sub)), sub.shape)
        if sub[a, b] < cut or sub[a, b] <= 0:
            break
        ca, cb = alive[a], alive[b]
        members[ca] += members[cb]
        link[ca, :] = np.minimum(link[ca, :], link[cb, :])
        link[:, ca] = link[ca, :]
        link[ca, ca] = np.inf
        alive.remove(cb)
    labels = np.zeros(n, dtype=int)
    for k, c in enumerate(alive):
        labels[members[c]] = k
    return labels


def equivalence_features(
    vectors: np.ndarray, support, pairs, claim_vec=None, stems=None
) -> dict[str, np.ndarray]:
    """Pair features for the equivalence stack. Equivalence is claim-conditioned: every
    perspective of a claim shares its topic, so the plain cosine is high for all of them.
    - cosine: of the stored bi-encoder vectors;
    - agree: how much the two stance probabilities agree (equivalent perspectives share a side);
    - resid: cosine after removing each vector's component along the claim's vector;
    - jacc: Jaccard overlap of the stems each perspective adds to the claim's.
    Measured on dev with stacks fitted on the tune claims (T3 F1): cosine 55.5, + agree 56.8,
    + resid 60.3, + agree + jacc 62.4, all four 62.7."""
    i, j = pairs
    feats = {"cosine": np.einsum("ij,ij->i", vectors[i], vectors[j])}
    if support is not None:
        s = np.asarray(support, dtype=np.float64)
        feats["agree"] = s[i] * s[j] + (1 - s[i]) * (1 - s[j])
    if claim_vec is not None:
        c = np.asarray(claim_vec, dtype=np.float64)
        c = c / (np.linalg.norm(c) + 1e-12)
        r = vectors - np.outer(vectors @ c, c)
        r = r / (np.linalg.norm(r, axis=1, keepdims=True) + 1e-9)
        feats["resid"] = np.einsum("ij,ij->i", r[i], r[j])
    if stems is not None:
        union = [len(stems[a] | stems[b]) for a, b in zip(i, j, strict=True)]
        inter = [len(stems[a] & stems[b]) for a, b in zip(i, j, strict=True)]
        feats["jacc"] = np.array(inter, dtype=np.float64) / np.maximum(1, union)
    return feats


def ce_needed(stack: Stack, feats: dict[str, np.ndarray], cut: float, lo=0.0, hi=1.0) -> np.ndarray:
    """Pairs whose equivalence the cross-encoder's score could lift to `cut` (the cluster cut):
    the stack's probability at the most favourable score (`lo` or `hi`, the ends of its range:
    0 and 1 before any pass) clears it. The others stay below the cut whatever the cross-encoder
    says, so complete-link never merges them and they are not scored (they get score 0): the
    clusters are exactly those of scoring every pair."""
    n = len(next(iter(feats.values())))
    ends = [np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)) for x in (lo, hi)]
    best = np.maximum(stack.prob({**feats, "ce": ends[0]}), stack.prob({**feats, "ce": ends[1]}))
    return best >= cut


def _at_most(need: np.ndarray, stack: Stack, feats: dict[str, np.ndarray], cap: int | None):
    """`need` cut down to the `cap` pairs with the highest bound (EngineConfig.equivalence_ce_max_pairs)."""
    if cap is None or need.sum() <= cap:
        return need
    best = stack.prob({**feats, "ce": np.ones(len(need))})
    order = np.argsort(-np.where(need, best, -1.0), kind="stable")
    out = np.zeros_like(need)
    out[order[:cap]] = True
    return out & need


def retriever_mismatch(manifest: dict, retrievers: Sequence[str]) -> str | None:
    """Why relevance is off on this index, or None. The relevance stack reads the fused RRF score,
    which grows with the number of retrievers: decisions fitted on BM25 + dense + ColBERT keep
    too few perspectives on a BM25 + dense index (T1 24.1 vs 54.7 on 40 dev claims)."""
    fitted = manifest.get("decisions_retrievers")
    if not fitted or set(fitted) == set(retrievers):
        return None
    return (
        f"the models' decisions were fitted on a {' + '.join(fitted)} index and this one has "
        f"{' + '.join(retrievers)}: relevance is miscalibrated (rebuild it with --retrievers "
        f"{','.join(fitted)}, or re-fit: perspect train --task calibrate --index NAME)"
    )


_VERB = {"strengthen": "strengthens", "weaken": "weakens"}


def _p(r: Relation) -> float:
    """P(the relation decided), or the larger of the two for "neither"."""
    if r.relation == "strengthen":
        return r.strengthen
    if r.relation == "weaken":
        return r.weaken
    return max(r.strengthen, r.weaken)


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
