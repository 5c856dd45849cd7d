"""The search pipeline as a sequence of stages, each a module with typed input and output:

    retrieve (pipeline.retrieve)    claim -> Candidates (hits + the claim as a Query)
    relevance (pipeline.relevance)  candidates -> Judged (P(relevant), P(support)) -> kept Members
    clusters (pipeline.clusters)    members -> PerspectiveClusters (equivalence, complete link;
                                    each cluster's side from pipeline.stance)
    mining (pipeline.mining)        an index with documents: arguments mined from them (and the
                                    news) join the clusters or form their own, with their source
    evidence (pipeline.evidence)    clusters -> clusters with backing paragraphs
    reasons (pipeline.pool_reasons) clusters whose evidence cites no reason: one from the
                                    reader's documents or the news, with its source
    news (pipeline.news)            claim + top clusters -> NewsItems (ClaimDiff)
    order (pipeline.order)          clusters -> sides interleaved, coverage

This module puts the models (loaded by perspect.reranker.factory, as `EngineConfig.serving`
says) into those stages and runs them in that order. Progress goes to a
callback (the TUI's worker) and a `threading.Event` cancels between stages.

Why one module: the stage table, the configuration whose comments keep the measurements behind
each default, and the wiring of each model into its stage are read together.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from perspect.core import background
from perspect.core.errors import Cancelled, ModelError, PerspectError
from perspect.core.index.corrections import Corrections
from perspect.core.model.decisions import Decisions, MiningDecision, RelationCuts
from perspect.core.result import EvidenceItem, Member, NewsItem, PerspectiveCluster, SearchResult
from perspect.core.types import Hit, Query, validate_claim
from perspect.pipeline import corrected, order, relevance
from perspect.pipeline.arguing import Arguing
from perspect.pipeline.bearing import Bearing
from perspect.pipeline.clusters import Clusters, Overflow, RelationPairs
from perspect.pipeline.debates import DebateSides
from perspect.pipeline.evidence import Evidence
from perspect.pipeline.idle import fill_judgments
from perspect.pipeline.lower import InFlight, fill_perspectives
from perspect.pipeline.mining import Mining
from perspect.pipeline.news import News
from perspect.pipeline.pool_reasons import PoolReasons
from perspect.pipeline.retrieve import Retrieve
from perspect.pipeline.stance import StanceScorer
from perspect.reranker import factory
from perspect.reranker.equivalence_ce import EquivalenceModel
from perspect.reranker.factory import Models
from perspect.reranker.model import PairModel
from perspect.reranker.news_judge import NewsJudge
from perspect.reranker.relation_judge import RelationJudge
from perspect.retriever.base import VectorBackend
from perspect.retriever.searcher import MAX_K, Searcher

__all__ = [
    "PAIR_MODELS",
    "Cancelled",
    "Engine",
    "EngineConfig",
    "ProgressCallback",
    "fast_config",
]

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
    # int8 cross-encoders (`python -m bench cost search`): ONNX Runtime's per-channel copies of
    # their graphs (runtime "onnx"), PyTorch's dynamic int8 (runtime "torch")
    quantize: bool = False
    # the equivalence cross-encoder's own choice (None: as `quantize`): its int8 scores correlate
    # .70 with fp32 (160 pairs) and cost T3 over clusters 1.5, where the pair model's cost nothing
    quantize_equivalence: bool | None = None
    # The models' runtime. "onnx": every model of the query path is served from its exported
    # graph by ONNX Runtime with a `tokenizers` tokenizer, so a new process imports neither
    # transformers nor (but for PLAID) torch: a cold search 3.6 s instead of 10 (bench/RESULTS.md,
    # "Latency"; docs/architecture.md, "Cold start"). "torch": the PyTorch models.
    runtime: str = "onnx"
    # At most this many pairs per search go through the equivalence cross-encoder (those with the
    # highest bound first; the rest count as its lowest score, 0). None: every pair that
    # could merge, the clusters `perspect eval` measures. Measured offline on dev gold
    # perspectives (both orders, margin .6), T3 over clusters: all 70.0 (p95 571 pairs per
    # claim), 96: 68.0, 48: 66.9, 32: 65.6. Shipped bundle (perspect eval --index default
    # --quantize --equivalence-max-pairs N), T3 pairs / clusters with ONNX Runtime's per-channel
    # int8: all 63.65 / 68.82, 48: 63.97 / 67.65, 24: 60.68 / 65.93 (fp32, all: 63.03 / 69.29);
    # PyTorch's per-tensor int8 (runtime "torch") cost more: all 62.3 / 67.8, 24: 60.5 / 65.4.
    # The default, 160, changed no partition of the 139 dev claims' searches (the most pairs one
    # asks: 186) and bounds a pool with hundreds of relevant perspectives a claim (`python -m
    # bench first pool`: up to 432 pairs).
    equivalence_ce_max_pairs: int | None = 160
    # Past this many pairs in a search (the highest bounds first), the equivalence
    # cross-encoder's int8 copy scores the rest (None: the one model for every pair; no effect
    # when the cross-encoder is int8 already). Median search: 12 pairs, p95 100 (bench/cost.py):
    # the tail's claims pay about half per extra pair; 6 of the 139 dev searches' partitions
    # differ from fp32's (99.7 % of pairs grouped alike). `perspect eval` scores T3 as the default
    # engine does (both settings) beside every pair in fp32. Figures: bench/RESULTS.md, "Latency".
    equivalence_fp32_pairs: int | None = 32
    # The cascade's gate before the equivalence cross-encoder (issue 62): a pair is asked only
    # where the stack over its cheap features (the bi-encoder cosines, the sides' agreement, the
    # words each adds) reaches this at the cross-encoder's best score; the others count as its
    # lowest. None: the floor fitted with the pair model's stack (its manifest's "cascade",
    # written by bench/cascade.py: the highest floor that loses at most 0.5 % of the tune claims'
    # pairs that clear the cluster cut once scored; .22 for the shipped bundle, leaving out 21 %
    # of the pairs the cut alone asks); 0: no gate. What it changes on dev: bench/RESULTS.md,
    # "The cascade".
    equivalence_ask_floor: float | None = None
    # news (an index with a news pool and a comparator): sentences retrieved for the claim and
    # compared sentence -> claim; those related are compared with the top clusters too
    news_candidates: int = 16
    news_max: int = 8
    news_clusters: int = 6
    # each of those clusters' own news: sentences retrieved by its perspective's words, judged
    # against it, at most `news_per_cluster_most` shown under it (issue 73)
    news_per_cluster: int = 4
    news_per_cluster_most: int = 2
    # relatedness gate before the comparator: cosine of the dense vectors (sentence, claim). The
    # comparator never saw pairs from different stories and calls some of them "strengthen". On
    # make demo's index (ClaimDiff's 186 articles), the top sentences of the claim's own story
    # score .52-.63 (impeachment, vaccines) and those of other stories .29-.46 (claims on
    # animal rights or the minimum wage, which no article covers): .5 lets the first through.
    # Sentence-sentence pairs (perspect compare) are gated lower: see CompareConfig.
    news_min_similarity: float = 0.5
    # mining (an index with documents: pipeline.mining): sentences retrieved per article pool,
    # read by the relation model at most (the closest to the claim), the top clusters they may
    # join, and the equivalence cross-encoder's pairs for joining them (the highest bounds)
    mine_per_pool: int = 16
    mine_most: int = 16
    mine_join: int = 8
    mine_ce_pairs: int | None = 12
    # the argument model (issue 55) where the bundle has one: False answers as before it (the
    # reader bench's "before" run, the latency bench's baseline)
    argument: bool = True
    # the bearing decision (issue 71) where the argument model has one: False keeps the relevance
    # cut and the neither cut (the previous bundle's answers, the benches' baseline)
    bearing: bool = True
    # sides carried from known debates where the index keeps them (issue 72; False: each
    # perspective read alone)
    debate_sides: bool = True

    def serving(self) -> factory.Serving:
        """How the models are served under this configuration (the factory's `Serving`)."""
        return factory.Serving(
            onnx=self.runtime == "onnx",
            int8=self.quantize,
            int8_equivalence=self.quantize_equivalence,
        )


# the models a search scores with: the pair model and those its manifest names
PAIR_MODELS = ("pair", "equivalence", "trunk", "reader", "argument")
FAST_EQUIVALENCE_PAIRS = 24


def fast_config(**overrides) -> EngineConfig:
    """Interactive speed on a small CPU, for a measured cost in T3 (bench/RESULTS.md, "Latency"): int8
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
        models: Models,
        config: EngineConfig | None = None,
        decisions: Decisions | None = None,
        news: bool = False,
    ):
        """`models`: the pair model and what it names, and the ClaimDiff comparator that ties news
        sentences to the claim (None: no news), loaded by the factory as `config.serving()`
        says (`Engine.load` does both); `news`: judge news by the trunk's news stack where it has
        one (then no comparator is needed). `decisions`: the fitted cuts and stacks; by default
        those saved with the pair model."""
        if models.pair is None:
            raise ModelError("the engine needs a pair model", hint="perspect models verify")
        self.searcher = searcher
        self.config = cfg = config or EngineConfig()
        self.model = models.pair
        self.decisions = decisions or Decisions.from_manifest(self.model.manifest)
        self.equivalence_ce = ce = models.equivalence
        self.comparator = models.comparator
        eq = self.decisions.stack("equivalence")
        if eq is not None and "ce" in eq.features and not self.equivalence_ce:
            raise ModelError(
                "the model's equivalence stack reads an equivalence cross-encoder its manifest "
                "does not name",
                hint="perspect train --task calibrate --equivalence-model models/equivalence",
            )
        trunk = models.trunk
        self.stance = StanceScorer(self.model, trunk, searcher)
        # the relation model (a trunk with an inference head) decides evidence verdicts, cited
        # reasons and news relations under its fitted cuts
        self.relation = trunk if trunk is not None and "nli" in trunk.heads else models.relation
        # news relations from the relation model where it has fitted news cuts (an index with
        # news: `comparator` is given), else from the ClaimDiff comparator
        # news relations from the argument trunk's news stack where it has one (issue 73: fitted
        # on the judged news pairs), else the relation model's fitted news cuts, else ClaimDiff
        judge = NewsJudge.of(trunk, self.model.manifest) if news or self.comparator else None
        if judge is None and self.comparator is not None:
            judge = RelationJudge.of(self.relation)
        self.news_judge = judge or self.comparator
        self.retrieve = Retrieve(searcher, cfg.fusion_depth, cfg.rrf_k)
        self.corrections = Corrections(searcher.dir.root)
        # the relation model's equivalence head over the stored lower states (a stack on "rel")
        pairs = None
        if trunk is not None and "equivalence" in trunk.heads:
            pairs = RelationPairs(trunk, self.stance.states)
        elif eq is not None and "rel" in eq.features:
            raise ModelError(
                "the model's equivalence stack reads the relation model's equivalence head, and "
                "the trunk its manifest names has none",
                hint="perspect models verify",
            )
        self.clusters = Clusters(
            self.retrieve,
            self.model,
            self.decisions,
            ce,
            cfg.min_overlap,
            cfg.equivalence_ce_max_pairs,
            pairs,
            self.overflow(ce),
            floor := self.ask_floor(),
        )
        cuts = (
            RelationCuts.from_manifest(self.relation.manifest, "evidence")
            if self.relation
            else None
        )
        # the argument model (issue 55), where the bundle has one with fitted cuts: whether a kept
        # perspective takes a side at all, and how each shown paragraph's sentence argues
        arg = models.argument
        self.arguing = (
            Arguing(arg, searcher, self.stance.lower) if arg is not None and arg.cuts else None
        )
        # what bears on the claim as written (issue 71), where the argument model has the
        # bearing head and its fitted decision; else the relevance cut and the neither cut
        self.bearing = (
            Bearing.of(self.arguing, self.stance, self.decisions.stance_side)
            if cfg.bearing
            else None
        )
        # sides carried from the debates the perspectives were written for (issue 72)
        self.debates = DebateSides(self.stance) if cfg.debate_sides and trunk is not None else None
        reader = models.reader
        self.evidence_stage = Evidence(
            searcher,
            self.decisions,
            cfg.evidence_clusters,
            cfg.evidence_per_cluster,
            cuts,
            reader,
            RelationCuts.from_manifest(reader.manifest, "compare") if reader else None,
            self.arguing,
        )
        self.pool_reasons = PoolReasons(searcher, self.arguing, cfg.evidence_clusters)
        self.mining = Mining(  # the argument model decides where it is; it reads the claim's
            searcher,  # lower states through the trunk (the relation model's own, or the sides')
            self.relation or trunk,
            MiningDecision.from_manifest(self.model.manifest) if self.relation else None,
            self.decisions,
            self.stance,
            Clusters(
                self.retrieve,
                self.model,
                self.decisions,
                ce,
                cfg.min_overlap,
                cfg.mine_ce_pairs,
                ask_floor=floor,
            ),
            cfg.mine_per_pool,
            cfg.mine_most,
            cfg.mine_join,
            cfg.fusion_depth,
            cfg.rrf_k,
            self.arguing,
        )
        self.news_stage = News(
            searcher,
            self.news_judge,
            cfg.news_candidates,
            cfg.fusion_depth,
            cfg.rrf_k,
            cfg.news_max,
            cfg.news_min_similarity,
            cfg.news_per_cluster,
            cfg.news_per_cluster_most,
        )

    def ask_floor(self) -> float | None:
        """The cascade's gate before the equivalence cross-encoder: the configuration's, else the
        one fitted with the pair model's stack (EngineConfig.equivalence_ask_floor); None: none."""
        floor = self.config.equivalence_ask_floor
        if floor is None:
            floor = (self.model.manifest.get("cascade") or {}).get("equivalence_ask_floor")
        return float(floor) if floor else None

    def overflow(self, ce: EquivalenceModel | None) -> Overflow | None:
        """The cross-encoder's int8 graph past a budget, where `equivalence_fp32_pairs` asks for
        it and the served cross-encoder is a float32 graph (EngineConfig.equivalence_fp32_pairs);
        opened when a search first needs it."""
        n = self.config.equivalence_fp32_pairs
        if n is None or ce is None or not ce.serves(False):
            return None

        def cheap() -> EquivalenceModel | None:
            got = ce.for_inference(int8=True)
            return got if got is not ce and got.serves(True) else None

        return Overflow(n, cheap)

    @classmethod
    def load(
        cls,
        searcher: Searcher,
        pair: PairModel | str | Path | None = None,
        config: EngineConfig | None = None,
        news: bool = False,
    ) -> Engine:
        """The engine over the pair model `pair` (a folder, default the bundle's, or a model in
        memory) and the models it names, loaded by the factory as `config` serves them; `news`:
        the news judge (the pair model's news stack over the trunk; an older bundle's comparator).
        The joint reader (`reader`, the comparator) only where no argument model with fitted
        cuts reads the cited reasons (`Evidence`): the shipped bundle's does, and loading the
        reader cost every cold search a model it never asked."""
        config = config or EngineConfig()
        want = tuple(w for w in PAIR_MODELS if w != "reader")
        if not config.argument:
            want = tuple(w for w in want if w != "argument")
        models = factory.load(want, config.serving(), pair)
        if models.argument is None or models.argument.cuts is None:
            more = factory.load(("reader",), config.serving(), models.pair)
            models = replace(models, reader=more.reader)
        if news and NewsJudge.of(models.trunk, models.pair.manifest) is None:  # an older bundle
            more = factory.load(("comparator", "relation"), config.serving(), models.pair)
            models = replace(models, comparator=more.comparator, relation=more.relation)
        return cls(searcher, models, config, news=news)

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
        with InFlight(), self.searcher.pinned():  # the idle fill waits meanwhile
            return self._search(claim, progress, cancel, k)

    def fill_idle(self, cancel: threading.Event, progress=None) -> int:
        """Keep what a claim's first search would otherwise compute, while no search runs
        (pipeline.idle): the lower states of the perspectives no search has touched yet, then
        the judgments of each perspective's shown links. What `perspect serve` and the TUI do
        while idle. Returns how many texts and pairs it computed."""
        if self.stance.lower is None:
            return 0
        done = fill_perspectives(self.stance.lower, cancel, progress)
        if self.arguing is not None and not cancel.is_set():
            done += fill_judgments(self.evidence_stage, cancel, progress)
        return done

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
        found = self.retrieve(claim, max(cfg.candidates, max_clusters))
        t = step("retrieve", 0.3, t)
        # what needs no cluster runs beside them (issue 42): the news sentences' relations to
        # the claim, from here on; the kept perspectives' evidence links, while clusters form
        aside: list[background.Pending] = []
        try:
            news_job = None
            if self.news_stage.active:
                work = self.searcher.carried(lambda: self.news_stage.about_claim(claim))
                news_job = background.Pending("perspect-news", work)
                aside.append(news_job)
            members, judged = self.kept(claim, found)
            if self.debates is not None and members:
                members = self.debates(claim, members)
            fixes = self.corrections.for_claim(claim)
            members = corrected.apply(members, found.hits, judged, fixes)
            related = () if members else tuple(relevance.near_misses(found.hits, judged))
            t = step("relevance+stance", 0.8, t)

            ids = [m.id for m in members]
            links = background.Pending(
                "perspect-links", self.searcher.carried(lambda: self.evidence_stage.links(ids))
            )
            aside.append(links)
            clusters = self.clusters(found.query, members, fixes.same)[:max_clusters]
            t = step("equivalence", 0.9, t)

            if self.mining.active:
                clusters = self.mining(found.query, clusters)[:max_clusters]
                if any(m.mined for c in clusters for m in c.members):
                    related = ()  # an answer after all: no near misses shown instead
                t = step("mining", 0.92, t)

            if news_job is not None:  # the clusters' own news beside their evidence: it reads
                # their representatives and sides, which the evidence does not change
                top, claim_news = clusters[: cfg.news_clusters], news_job

                def cluster_news() -> list:
                    return self.news_stage.with_clusters(claim_news.result(), top)

                news_job = background.Pending("perspect-news", self.searcher.carried(cluster_news))
                aside.append(news_job)
            clusters = self.evidence_stage(clusters, links.result())
            t = step("evidence", 0.95, t)
            if self.pool_reasons.active:
                clusters = self.pool_reasons(clusters)
                t = step("pool reasons", 0.96, t)

            news = []
            if news_job is not None:
                news = news_job.result()
                t = step("news", 0.98, t)
        finally:
            for job in aside:  # a cancelled or failed search leaves nothing running
                job.job.thread.join()

        shown, coverage = order.ordered(
            clusters, cfg.thin_side, self.model.manifest, self.searcher.retrievers
        )
        report("done", 1.0)
        # how the sides shown were read, where the claim has a second reading (pipeline.valence)
        reading = self.stance.second_reading(claim) if shown else None
        return SearchResult(
            claim=claim,
            clusters=tuple(shown),
            coverage=coverage,
            hits=tuple(found.hits),
            took_ms=(time.perf_counter() - t0) * 1000,
            timings_ms=timings,
            news=tuple(news),
            related=related,
            second_reading=reading,
        )

    def kept(self, claim: str, found) -> tuple[list[Member], relevance.Judged]:
        """The candidates shown on the claim, and the judgments the near misses and corrections
        read: the bearing decision's where the bundle has one (P(bears) as relevance), else the
        relevance cut, then the argument model's neither cut."""
        if self.bearing is None:
            judged = self.judge(found.query, found.hits)
            members = relevance.kept(found.hits, judged, self.relevance_threshold())
            if self.arguing is not None and members:  # those that take no side leave the sides
                members, _ = self.arguing.sided(self.claim_states(claim), members)
            return members, judged
        first = relevance.judge(
            self.model, self.decisions, found.query, found.hits, self.dense, self.config.rrf_k
        )
        if not found.hits:
            return [], first
        members, bears = self.bearing.kept(
            claim, self.claim_states(claim), found.hits, first.relevance, first.stance
        )
        judged = replace(first, relevance=bears)
        if not members:  # the near misses' sides as a search shows them (the trunk's)
            near = [int(i) for i in np.argsort(-bears, kind="stable")[: relevance.RELATED_MAX]]
            support = np.array(first.stance, dtype=np.float64)
            support[near] = self.stance(
                claim, [found.hits[i].text for i in near], [found.hits[i].id for i in near],
                support[near],
            )  # fmt: skip
            judged = replace(judged, stance=support)
        return members, judged

    def claim_states(self, claim: str):
        """The claim's lower states for the argument model: the stance trunk's where the two
        share their lower layers (computed once a search), else its own."""
        trunk = self.stance.trunk
        if trunk is not None and trunk.states_key == self.arguing.model.states_key:
            return trunk.claim_lower(claim)
        return self.arguing.model.claim_lower(claim)

    # -- the stages one by one, as `perspect eval perspectrum` runs them ---------------------------
    @property
    def dense(self) -> VectorBackend | None:
        """The perspective pool's stored vectors (a `VectorBackend`), or None."""
        return self.retrieve.vectors

    def candidates(self, claim: str, k: int | None = None) -> tuple[tuple[Hit, ...], Query]:
        found = self.retrieve(claim, k or self.config.candidates)
        return found.hits, found.query

    def query(self, claim: str, vector=None) -> Query:
        return self.retrieve.query(claim, vector)

    def judge(self, query: Query, hits: Sequence[Hit]) -> relevance.Judged:
        """Relevance and the pair head's P(support) in one pass; with a stance trunk, P(support)
        of the candidates a search shows (kept, else the near misses) comes from the trunk."""
        judged = relevance.judge(
            self.model, self.decisions, query, hits, self.dense, self.config.rrf_k
        )
        if self.stance.trunk is None or not hits:
            return judged
        rel = judged.relevance
        shown = [i for i in range(len(hits)) if rel[i] >= self.relevance_threshold()]
        if not shown:
            shown = [int(i) for i in np.argsort(-rel, kind="stable")[: relevance.RELATED_MAX]]
        support = np.array(judged.stance, dtype=np.float64)
        support[shown] = self.stance(
            query.text, [hits[i].text for i in shown], [hits[i].id for i in shown], support[shown]
        )
        return replace(judged, stance=support)

    def relevance_features(self, hits, query: Query, head: np.ndarray) -> dict[str, np.ndarray]:
        return relevance.relevance_features(hits, query, head, self.dense, self.config.rrf_k)

    def relevance_threshold(self) -> float:
        return self.decisions.relevance

    def equivalence(self, query, ids, texts, support=None, allowed=None) -> np.ndarray:
        return self.clusters.equivalence(query, ids, texts, support, allowed)

    def ce_pairs(self, feats: dict[str, np.ndarray], allowed: np.ndarray | None) -> np.ndarray:
        return self.clusters.ce_pairs(feats, allowed)

    def equivalence_threshold(self) -> float:
        return self.clusters.equivalence_threshold()

    def cluster_cut(self) -> float:
        return self.clusters.cluster_cut()

    def point_stems(self, query: Query, texts: Sequence[str]) -> list[set[str]]:
        return self.clusters.point_stems(query, texts)

    def evidence(self, groups: Sequence[Sequence[str]]) -> list[list[EvidenceItem]]:
        return self.evidence_stage.for_groups(groups)

    def group_links(self, groups: Sequence[Sequence[str]]):
        return self.evidence_stage.group_links(groups)

    def news(self, claim: str, clusters: Sequence[PerspectiveCluster]) -> list[NewsItem]:
        return self.news_stage(claim, clusters)
