"""The mining stage: perspectives from the reader's own documents (and the news), beside the
curated ones, each with the article it came from.

A claim the curated pool never saw gets no answer from it; an article that argues the claim
does hold one. Where the index has documents, a search retrieves candidate sentences from the
documents and news pools (RRF over their retrievers), keeps those whose dense cosine to the claim
clears the fitted gate, and reads each against the claim with the relation model in one pass of
its top layers over the sentence's lower states (paid once: pipeline.lower): P(support),
inference, ClaimDiff and equivalence heads. A fitted stack over those, the cosine, the retrieval score and cue words
(perspect.pipeline.cues) decides whether the sentence is an argument on the claim
(perspect.core.model.decisions.MiningDecision, fitted for precision on held-out train claims by
perspect.lab.mining_fit): reporting sentences and background facts stay out. Each kept sentence
joins the curated cluster that makes the same point (the clustering's equivalence stack and
complete link: it must match every member), or forms a cluster with the other mined sentences
that make its point, or stands alone. Curated clusters are never split or merged here, so an
index without documents answers exactly as before (the stage does not run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perspect.core.model.decision_stack import logit
from perspect.core.model.decisions import Decisions, MiningDecision
from perspect.core.result import Member, PerspectiveCluster, Provenance
from perspect.core.types import ARTICLE_POOLS, Hit, Query
from perspect.pipeline import stance
from perspect.pipeline.clusters import Clusters, complete_link
from perspect.pipeline.cues import cues
from perspect.pipeline.lower import LowerStates
from perspect.reranker import stance_trunk
from perspect.reranker.argument import NEITHER, side_share
from perspect.retriever.searcher import Searcher

HEADS = ("stance", "nli", "claimdiff", "equivalence")  # the relation model's, read in one pass
GATE = 0.3  # the dense cosine a candidate needs where no mining decision was fitted


@dataclass(frozen=True)
class Candidate:
    hit: Hit  # its pool in `hit.pool`, its fused retrieval score in `hit.score`
    cosine: float  # dense cosine to the claim


@dataclass(frozen=True)
class Judged:
    """The candidates of one claim as the decision reads them."""

    candidates: tuple[Candidate, ...]
    features: dict[str, np.ndarray]
    argument: np.ndarray  # P(an argument on the claim)
    support: np.ndarray  # calibrated P(supports the claim); NaN under the argument cut


def features(
    heads: dict[str, np.ndarray], cands: Sequence[Candidate], rrf_k: int
) -> dict[str, np.ndarray]:
    """The decision's inputs for each (claim, sentence) pair: the relation model's heads (its
    P(support) and how sure it is, P(entail / neutral / contradict) of the inference head,
    P(neither / strengthen / weaken) of ClaimDiff's, P(same point as the claim)), the cosine,
    the fused retrieval score and the cue words (each a logit where it is a probability)."""
    nli, cd = heads["nli"], heads["claimdiff"]
    stance_ = logit(heads["stance"])
    return {
        "stance": stance_,
        "conviction": np.abs(stance_),
        "entail": logit(nli[:, 0]),
        "neutral": logit(nli[:, 1]),
        "contradict": logit(nli[:, 2]),
        "neither": logit(cd[:, 0]),
        "strengthen": logit(cd[:, 1]),
        "weaken": logit(cd[:, 2]),
        "same": logit(heads["equivalence"]),
        "cosine": np.array([c.cosine for c in cands], dtype=np.float64),
        "rrf": np.array([c.hit.score for c in cands], dtype=np.float64) * rrf_k,
        **cues([c.hit.text for c in cands]),
    }


class Mining:
    def __init__(
        self,
        searcher: Searcher,
        trunk,
        decision: MiningDecision | None,
        decisions: Decisions,
        side: stance.StanceScorer,
        clusters: Clusters,
        per_pool: int,
        most: int,
        join: int,
        depth: int,
        rrf_k: int,
        arguing=None,
    ):
        """`trunk`: the relation model (None, or one without its inference heads: no mining);
        `decision`: its fitted mining decision (None: no mining); `side`: the stance decision
        curated perspectives are sided with, read from the same pass; `clusters`: the clustering's
        equivalence (with its own cap on cross-encoder pairs); `per_pool`: candidates retrieved
        per article pool; `most`: sentences read by the model at most (the best by cosine);
        `join`: the top clusters a mined sentence may join."""
        self.searcher, self.trunk, self.decision = searcher, trunk, decision
        self.decisions, self.clusters, self.side = decisions, clusters, side
        self.per_pool, self.most, self.join, self.depth, self.rrf_k = (
            per_pool,
            most,
            join,
            depth,
            rrf_k,
        )
        shared = side.lower
        self.lower = (
            shared
            if trunk is not None and shared is not None and shared.key == trunk.states_key
            else (LowerStates(trunk, searcher) if trunk is not None else None)
        )
        # the argument model (perspect.pipeline.arguing) with its fitted cuts: where given, it
        # decides (issue 55): an argument when 1 - P(neither) clears `mine_at`, its side from
        # P(for) / (P(for) + P(against)) past `mine_side_at`; fitted on a held-out UKP topic
        self.arguing = arguing if arguing is not None and arguing.cuts is not None else None

    @property
    def active(self) -> bool:
        """The index has documents, with dense vectors, and the model can judge them."""
        reads = self.arguing is not None or (
            self.decision is not None
            and self.trunk is not None
            and all(h in self.trunk.heads for h in HEADS)
        )
        return (
            reads
            and self.trunk is not None
            and bool(self.searcher.pools.get("documents"))
            and self.searcher.vector_backend("documents") is not None
        )

    # -- candidates and their judgment -------------------------------------------------------
    def gather(self, query: Query, gate: float | None = None) -> list[Candidate]:
        """Each article pool's top sentences for the claim (one per wording, the best-ranked),
        those over the cosine gate (the decision's, or `gate`), the `most` closest."""
        if gate is None:
            gate = self.decision.min_similarity if self.decision is not None else GATE
        out: dict[str, Candidate] = {}
        for pool in ARTICLE_POOLS:
            if not self.searcher.pools.get(pool) or query.vector is None:
                continue
            vectors = self.searcher.vector_backend(pool)
            if vectors is None:
                continue
            hits = self.searcher.hybrid(query.text, pool, self.per_pool, self.depth, self.rrf_k)
            hits = hits.hits.hits
            if not hits:
                continue
            cos = vectors.vectors([h.id for h in hits]) @ query.vector
            for h, c in zip(hits, cos, strict=True):
                key = h.text.casefold()
                if c >= gate and key not in out:
                    out[key] = Candidate(h, float(c))
        return sorted(out.values(), key=lambda c: -c.cosine)[: self.most]

    def read(
        self, query: Query, cands: Sequence[Candidate], states: Sequence[np.ndarray] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The relation model's heads on (claim, sentence), from one pass of its top layers over
        the stored lower states (`states`, where the caller has them), and the decision's
        features from them."""
        assert self.trunk is not None
        claim = self.trunk.claim_lower(query.text)
        if states is None:
            states = self.states(cands)
        heads = self.trunk.every_head([claim] * len(cands), states)
        return heads, features(heads, cands, self.rrf_k)

    def judge(self, query: Query, cands: Sequence[Candidate]) -> Judged:
        """The fitted decision over what the relation model reads of each candidate (the
        argument model's, where there is one)."""
        if not cands:
            z = np.zeros(0)
            return Judged((), {}, z, z)
        states = self.states(cands)
        if self.arguing is not None:
            claim = self.trunk.claim_lower(query.text)
            p = self.arguing.model.judge([claim] * len(cands), states)
            argument = 1.0 - p[:, NEITHER]
            return Judged(tuple(cands), {}, argument, self._share(query.text, p, states))
        assert self.decision is not None
        heads, feats = self.read(query, cands, states)
        argument = self.decision.argument.prob(feats)
        # the side only of those shown: the stance decision's pair-head pass is not paid for
        # candidates under the cut
        shown = np.flatnonzero(argument >= self.decision.cut)
        support = np.full(len(cands), np.nan)
        support[shown] = self.side.from_trunk(
            query.text,
            [cands[i].hit.text for i in shown],
            heads["stance"][shown],
            [states[i] for i in shown],
        )
        return Judged(tuple(cands), feats, argument, support)

    def _share(self, claim: str, p: np.ndarray, states: Sequence[np.ndarray]) -> np.ndarray:
        """The for-share of each candidate, averaged with its for-share of the claim's second
        reading (the other way round where its sign says so) at the weight the sides were fitted
        with (pipeline.stance, `with_valence`): read against "Zoos should be closed" alone, the
        direction-trained model gives the zoo articles' sentences shares of .41-.60 whichever
        way they argue; against "Zoos are good" too, .23-.26 for those that defend zoos and .76
        for captivity's stress (bench/sources/, tests/test_mining.py)."""
        share = side_share(p)
        second = self.side.second_reading(claim) if self.side is not None else None
        if second is None or not len(p):
            return share
        lower = self.trunk.claim_lower(second.text)
        q = side_share(self.arguing.model.judge([lower] * len(p), states))
        w = stance_trunk.valence_weight(self.side.model.manifest)
        return (1 - w) * share + w * (q if second.sign > 0 else 1 - q)

    def states(self, cands: Sequence[Candidate]) -> list[np.ndarray]:
        """Each candidate's lower states, paid once (pipeline.lower: a document sentence's
        stored with it, a news sentence's kept with the index at first touch)."""
        ids = [c.hit.id if c.hit.pool == "documents" else None for c in cands]
        return self.lower([c.hit.text for c in cands], ids, pool="documents")

    def members(self, query: Query) -> tuple[list[Member], np.ndarray]:
        """The mined arguments, best first, and their dense vectors."""
        judged = self.judge(query, self.gather(query))
        cut = self.arguing.cuts.mine_at if self.arguing is not None else self.decision.cut
        keep = [i for i in np.argsort(-judged.argument, kind="stable")
                if judged.argument[i] >= cut]  # fmt: skip
        out = []
        for i in keep:
            h = judged.candidates[i].hit
            out.append(
                Member(
                    h.id,
                    h.text,
                    float(judged.argument[i]),
                    float(judged.support[i]),
                    h.metadata,
                    source=Provenance.of(h.pool, h.id, h.metadata),
                )
            )
        if not out:  # nothing clears the cut: no vectors to read (and none to reshape)
            return out, np.zeros((0, 0), dtype=np.float32)
        vecs = [self.searcher.vector_backend(m.source.pool).vectors([m.id])[0] for m in out]
        return out, np.array(vecs).reshape(len(out), -1)

    # -- into the answer ---------------------------------------------------------------------
    def __call__(
        self, query: Query, clusters: Sequence[PerspectiveCluster]
    ) -> list[PerspectiveCluster]:
        """The clusters with the mined arguments joined where they make a cluster's point, and
        the others as clusters of their own, best first."""
        if not self.active:
            return list(clusters)
        mined, vecs = self.members(query)
        if not mined:
            return list(clusters)
        return self.placed(query, clusters, mined, vecs)

    def placed(
        self,
        query: Query,
        clusters: Sequence[PerspectiveCluster],
        mined: Sequence[Member],
        vecs: np.ndarray,
    ) -> list[PerspectiveCluster]:
        """Complete link over the top clusters' phrasings and the mined sentences, where the
        phrasings of one curated cluster start together and two curated clusters never merge."""
        open_ = list(clusters[: self.join])
        owner = [ci for ci, c in enumerate(open_) for _ in c.members]
        curated = [m for c in open_ for m in c.members]
        members = curated + list(mined)
        n = len(curated)
        support = np.array([m.support for m in members])
        allowed = self.decisions.may_merge(support)
        allowed[:n, :n] = False
        stored = self.clusters.retrieve.vectors  # the perspectives' (None: nothing to join)
        if stored is None:
            allowed[:n, :] = allowed[:, :n] = False
        pv = stored.vectors([m.id for m in curated]) if stored is not None and n else None
        vectors = np.vstack([np.zeros((n, vecs.shape[1])) if pv is None else pv, vecs])
        ids, texts = [m.id for m in members], [m.text for m in members]
        probs = self.clusters.equivalence(query, ids, texts, support, allowed, vectors)
        for i in range(n):
            for j in range(n):
                if i != j and owner[i] == owner[j]:
                    probs[i, j], allowed[i, j] = 2.0, True  # a curated cluster stays one
        labels = complete_link(probs, allowed, self.clusters.cluster_cut())
        joined: dict[int, list[Member]] = {}
        alone: dict[int, list[Member]] = {}
        for j, m in enumerate(mined, start=n):
            at = [i for i in range(n) if labels[i] == labels[j]]
            if at:
                joined.setdefault(owner[at[0]], []).append(m)
            else:
                alone.setdefault(int(labels[j]), []).append(m)
        out = [
            self._cluster(list(c.members) + joined[ci], c) if ci in joined else c
            for ci, c in enumerate(open_)
        ]
        out += list(clusters[self.join :])
        own = [self._cluster(ms) for ms in alone.values()]
        if self.arguing is not None:
            own = [c for c in map(self._sided, own) if c is not None]
        out += own
        return sorted(out, key=lambda c: -c.score)

    def _sided(self, c: PerspectiveCluster) -> PerspectiveCluster | None:
        """A cluster of mined arguments alone, shown on the side it argues, else only its
        phrasings that each clear the side cut on the side it leans to, else not at all: the
        model that found them arguments cannot say for what, and a reader cannot use that (the
        zoo articles' reports clear the argument cut and none clears the side cut; three
        phrasings of "zoos save species" merge at a mean share of .36, two of them at .23-.26)."""
        if c.stance != stance.UNCLEAR:
            return c
        at = self.arguing.cuts.mine_side_at
        keep = [m for m in c.members if (m.support >= at if c.leans == "support"
                                         else m.support <= 1 - at)]  # fmt: skip
        return self._cluster(keep) if keep else None

    def _cluster(
        self, ms: list[Member], was: PerspectiveCluster | None = None
    ) -> PerspectiveCluster:
        """A cluster of `ms` (a curated one's phrasings first, then the mined): its side from
        all members' mean P(support), as any cluster's; one of mined sentences alone is shown
        on a side only past the decision's side margin (else unclear, with its lean)."""
        decisions = self.decisions
        if was is None and self.arguing is not None:  # its side from the for-share past the cut
            ms = sorted(ms, key=lambda m: -m.relevance)
            share = float(np.mean([m.support for m in ms]))
            at = self.arguing.cuts.mine_side_at
            side = "support" if share >= at else "oppose" if share <= 1 - at else stance.UNCLEAR
            strength = max(share, 1 - share)
            leans = None
            if side == stance.UNCLEAR:
                leans = "support" if share >= 0.5 else "oppose"
            return PerspectiveCluster(ms[0], tuple(ms), side, strength, ms[0].relevance * strength,
                                      leans=leans)  # fmt: skip
        if was is None:
            ms = sorted(ms, key=lambda m: -m.relevance)
            assert self.decision is not None
            margin = max(decisions.stance_unclear or 0.0, self.decision.side_margin)
            decisions = replace(decisions, stance_unclear=margin)
        rep = was.representative if was is not None else ms[0]
        side, strength = stance.side(ms, decisions)
        leans = stance.leaning(ms, decisions) if side == stance.UNCLEAR else None
        score = rep.relevance * strength
        if was is not None:
            return replace(was, members=tuple(ms), stance=side, strength=strength, score=score,
                           leans=leans)  # fmt: skip
        return PerspectiveCluster(rep, tuple(ms), side, strength, score, leans=leans)
