"""The third stage: equivalent phrasings merged into clusters, each with its side.

Equivalence is a stack over *stored* perspective vectors (no forward pass): their cosine, their
cosine with the claim's direction removed, stance agreement and the overlap of the words each
adds to the claim (`equivalence_features`), calibrated on held-out train claims. Measured on dev
it beats the trained claim-conditioned head (T3 F1 62.7 vs 35.1), which remains the fallback for
indexes without dense vectors. When the decisions name a dedicated equivalence cross-encoder
(reranker.equivalence_ce), its score is one more feature, computed only for the pairs it could
merge (`ce_needed`). Kept perspectives are merged by complete-link agglomeration (`may_merge`:
across sides unless their stances clearly differ); the most relevant phrasing represents its
cluster and the members' mean stance gives its side (pipeline.stance).

The stack's model feature is either the cross-encoder's score ("ce") or the relation model's
equivalence head over the two perspectives' stored lower-layer states ("rel": the index keeps
them for stance, so only the top layers run per pair: `RelationPairs`). Either way the model is
asked only for the pairs a merge depends on (pipeline.linkage: lazy complete-link under a budget
of pairs, `EngineConfig.equivalence_ce_max_pairs`), and only where the stack over the cheap
features reaches the cascade's gate at the model's best score (`EngineConfig.
equivalence_ask_floor`, fitted by bench/cascade.py). Past a first budget of pairs
(`EngineConfig.equivalence_fp32_pairs`) the cross-encoder's int8 copy scores the rest: a claim
with many kept perspectives costs fewer milliseconds a pair instead of a slower answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

import numpy as np

from perspect.core.errors import ModelError
from perspect.core.model.decision_stack import Stack
from perspect.core.model.decisions import Decisions
from perspect.core.result import Member, PerspectiveCluster
from perspect.core.types import Query
from perspect.pipeline import stance
from perspect.pipeline.debates import debate_sides_agree
from perspect.pipeline.linkage import Linked, lazy_complete_link
from perspect.pipeline.retrieve import Retrieve
from perspect.reranker.equivalence_ce import EquivalenceModel
from perspect.reranker.model import PairModel
from perspect.reranker.roles import pair_for
from perspect.reranker.stance_trunk import StanceTrunk

MODEL_FEATURES = ("ce", "rel")  # the equivalence stack's model feature (one of them)
LINK_BATCH = 8  # pairs per model call while clusters form (pipeline.linkage)


class RelationPairs:
    """P(same point) of two perspectives from the relation model's equivalence head, decomposed:
    each perspective's lower-layer states as the index stores them for stance (read once a search,
    computed where missing), the top layers over the pair in one canonical order (by text, so a
    pair scores the same wherever it appears). Unconditioned on the claim: it was trained on pairs
    of one claim's perspectives, and the stack adds the claim (the residual cosine)."""

    def __init__(self, trunk: StanceTrunk, states: Callable[..., list[np.ndarray]]):
        """`states(texts, ids)`: each text's lower-layer states (pipeline.stance.StanceScorer)."""
        if "equivalence" not in trunk.heads:
            raise ModelError("the trunk has no equivalence head", hint="perspect models verify")
        self.trunk = trunk
        self.states = states

    def session(self, ids: Sequence[str], texts: Sequence[str]) -> Callable[..., np.ndarray]:
        """(i, j, _) -> the head's P(same point) of pairs (texts[i], texts[j]) of one search."""
        got: dict[int, np.ndarray] = {}

        def score(i, j, _feats=None) -> np.ndarray:
            todo = sorted({int(k) for k in (*i, *j)} - got.keys())
            if todo:
                made = self.states([texts[k] for k in todo], [ids[k] for k in todo])
                got.update(zip(todo, made, strict=True))
            a, b = zip(*(canonical(texts, x, y) for x, y in zip(i, j, strict=True)), strict=True)
            return self.trunk.pairs("equivalence", [got[x] for x in a], [got[y] for y in b])

        return score

    def predict(self, ids: Sequence[str], texts: Sequence[str], pairs) -> np.ndarray:
        """Every pair (i, j) of `pairs` at once (evaluation: T3 scores every pair)."""
        if not len(pairs):
            return np.zeros(0)
        i, j = (np.array(x) for x in zip(*pairs, strict=True))
        return self.session(ids, texts)(i, j)


def canonical(texts: Sequence[str], i: int, j: int) -> tuple[int, int]:
    return (int(i), int(j)) if (texts[i], i) <= (texts[j], j) else (int(j), int(i))


class Overflow:
    """A cheaper copy of the equivalence cross-encoder for the pairs of a search past `budget`,
    opened at the first search that needs it (most searches ask fewer pairs: a cold search need
    not wait for it). `model()` gives the copy, or None where none can be served."""

    def __init__(self, budget: int, open: Callable[[], EquivalenceModel | None]):
        self.budget = budget
        self._open = open
        self._lock = threading.Lock()
        self._got: list[EquivalenceModel | None] = []

    @property
    def opened(self) -> bool:
        return bool(self._got)

    def model(self) -> EquivalenceModel | None:
        with self._lock:
            if not self._got:
                self._got.append(self._open())
            return self._got[0]


class Clusters:
    def __init__(
        self,
        retrieve: Retrieve,
        model: PairModel,
        decisions: Decisions,
        equivalence_ce: EquivalenceModel | None,
        min_overlap: float,
        max_ce_pairs: int | None,
        relation: RelationPairs | None = None,
        overflow: Overflow | None = None,
        ask_floor: float | None = None,
    ):
        """`max_ce_pairs`: at most this many pairs scored by the equivalence model a search
        (None: every pair a merge depends on). `relation`: the relation model's equivalence
        head, for a stack that reads "rel". `overflow`: past its first `budget` pairs of a
        search, a cheaper copy of the cross-encoder scores the rest (its int8 graph:
        EngineConfig.equivalence_fp32_pairs). `ask_floor`: the cascade's gate (None: none): a
        pair whose stacked probability at the model's best score stays under it is never asked
        and counts as the model's lowest score (EngineConfig.equivalence_ask_floor)."""
        self.retrieve = retrieve
        self.ask_floor = ask_floor
        self.model = model
        self.decisions = decisions
        self.equivalence_ce = equivalence_ce
        self.overflow = overflow
        self.relation = relation
        self.min_overlap = min_overlap  # stem Jaccard for a pair the head scores (no vectors)
        self.max_ce_pairs = max_ce_pairs
        self.last: Linked | None = None  # the last search's linkage (benches read it)

    def __call__(
        self, query: Query, members: list[Member], same: frozenset[frozenset[str]] = frozenset()
    ) -> list[PerspectiveCluster]:
        """Complete-link agglomeration of the kept perspectives (every pair in a cluster must pass
        the cut: single-link chaining merged 11 phrasings of different points into one cluster,
        and measured worse on the tune claims, T3-after-clustering F1 32 vs 52), best first.
        `same`: pairs of ids a reader said make one point (core.index.corrections): merged."""
        if not members:
            return []
        support = np.array([m.support for m in members])
        allowed = self.decisions.may_merge(support) & debate_sides_agree(members)
        ids, texts = [m.id for m in members], [m.text for m in members]
        # a perspective a reader placed on a side stays the cluster they acted on (merged only
        # where they said two make one point): hidden in another point's cluster, their
        # correction would seem lost
        paired = {p for pair in same for p in pair}
        for i, m in enumerate(members):
            if m.corrected and m.id not in paired:
                allowed[i, :] = allowed[:, i] = False
                allowed[i, i] = True
        forced = np.zeros(allowed.shape, dtype=bool)
        for i, a in enumerate(ids):
            for j, b in enumerate(ids):
                if i != j and frozenset((a, b)) in same:
                    forced[i, j] = allowed[i, j] = True
        if self.model_feature() is not None and self.with_vectors:
            self.last = self.link(query, ids, texts, support, allowed, forced)
            labels = self.last.labels
        else:
            probs = self.equivalence(query, ids, texts, support, allowed)
            probs[forced] = 1.0
            labels = complete_link(probs, allowed, self.cluster_cut())
        groups: dict[int, list[int]] = {}
        for i, lab in enumerate(labels):
            groups.setdefault(int(lab), []).append(i)
        out = []
        for idx in groups.values():
            ms = sorted((members[i] for i in idx), key=lambda m: -m.relevance)
            side, strength = stance.side(ms, self.decisions)
            score = ms[0].relevance * strength
            leans = stance.leaning(ms, self.decisions) if side == stance.UNCLEAR else None
            out.append(PerspectiveCluster(ms[0], tuple(ms), side, strength, score, leans=leans))
        return sorted(out, key=lambda c: -c.score)

    def model_feature(self) -> str | None:
        """The equivalence stack's model feature ("ce", "rel"), or None."""
        st = self.decisions.stack("equivalence")
        return next((f for f in MODEL_FEATURES if st is not None and f in st.features), None)

    def link(self, query, ids, texts, support, allowed, forced=None) -> Linked:
        """Complete-link over the stack with the model's score asked for lazily, at most
        `max_ce_pairs` pairs (pipeline.linkage); `forced` pairs count as certain."""
        st = self.decisions.stack("equivalence")
        name = self.model_feature()
        n = len(ids)
        iu = np.triu_indices(n, 1)
        feats = self.base_features(query, ids, texts, support, iu)
        lo, hi = np.zeros((n, n)), np.zeros((n, n))
        ends = [st.prob({**feats, name: np.full(len(iu[0]), x)}) for x in (0.0, 1.0)]
        lo[iu], hi[iu] = np.minimum(*ends), np.maximum(*ends)
        lo, hi = lo + lo.T, hi + hi.T
        if self.ask_floor is not None:  # the cheap features decide: never asked, counts as lo
            cheap = hi < self.ask_floor
            hi[cheap] = lo[cheap]
        known = None
        if forced is not None and forced.any():
            lo[forced] = hi[forced] = 1.0
            known = forced
        score_pairs = self.scorer(query, ids, texts)
        where = np.full((n, n), -1)
        where[iu] = np.arange(len(iu[0]))

        def score(i: np.ndarray, j: np.ndarray) -> np.ndarray:
            k = where[np.minimum(i, j), np.maximum(i, j)]
            sub = {f: v[k] for f, v in feats.items()}
            return st.prob({**sub, name: score_pairs(i, j, sub)})

        return lazy_complete_link(
            lo, hi, allowed, self.cluster_cut(), score, self.max_ce_pairs, LINK_BATCH, known
        )

    def scorer(self, query: Query, ids, texts) -> Callable[..., np.ndarray]:
        """(i, j, their base features) -> the model feature of those pairs, for one search."""
        if self.model_feature() == "rel":
            if self.relation is None:
                raise ModelError(
                    "the equivalence stack reads the relation model's equivalence head, and no "
                    "trunk with one is loaded",
                    hint="perspect models verify",
                )
            return self.relation.session(ids, texts)
        st, cut = self.decisions.stack("equivalence"), self.cluster_cut()
        left = [self.overflow.budget if self.overflow else len(texts) ** 2]

        def ce(i, j, sub):
            pairs = [(texts[a], texts[b]) for a, b in zip(i, j, strict=True)]
            n = min(len(pairs), left[0])  # the first pairs asked (the highest bounds) by the model
            left[0] -= n
            rest = self.equivalence_ce
            if n < len(pairs) and self.overflow is not None:  # opened by the first search past it
                rest = self.overflow.model() or rest
            parts = ((self.equivalence_ce, slice(0, n)), (rest, slice(n, None)))
            return np.concatenate(
                [
                    both_orders(m, query.text, pairs[s], st, {k: v[s] for k, v in sub.items()}, cut)
                    for m, s in parts
                ]
            )

        return ce

    def base_features(
        self, query, ids, texts, support, pairs, vectors: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """The stack's features but the model's, of `pairs` (index arrays i, j). `vectors`: the
        texts' dense vectors where they are not all stored perspectives (mined sentences)."""
        st = self.decisions.stack("equivalence")
        if query.vector is None and "resid" in st.features:
            query = self.retrieve.query(query.text, vector=True)
        stems = self.point_stems(query, texts) if "jacc" in st.features else None
        if vectors is None:
            vectors = self.retrieve.vectors.vectors(list(ids))
        return equivalence_features(vectors, support, pairs, query.vector, stems)

    @property
    def with_vectors(self) -> bool:
        return self.retrieve.vectors is not None

    def cluster_cut(self) -> float:
        """The complete-link cut, tuned for clusters on held-out claims."""
        return self.decisions.cluster_cut(with_vectors=self.with_vectors)

    def equivalence_threshold(self) -> float:
        d = self.decisions
        return d.equivalence if self.with_vectors else d.equivalence_head

    def equivalence(
        self,
        query: Query,
        ids: Sequence[str],
        texts: Sequence[str],
        support: Sequence[float] | None = None,
        allowed: np.ndarray | None = None,
        vectors: np.ndarray | None = None,
    ) -> np.ndarray:
        """P(same point) for every pair (n x n); `vectors`: the texts' dense vectors where they
        are not all perspectives (mined sentences: perspect.pipeline.mining). With stored
        vectors and a cosine stack: the
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
        if st is not None and self.with_vectors and n:
            iu = np.triu_indices(n, 1)
            feats = self.base_features(query, ids, texts, support, iu, vectors)
            name = self.model_feature()
            if name is not None:
                need = self.ce_pairs(feats, None if allowed is None else allowed[iu])
                feats[name] = np.zeros(len(iu[0]))
                sub = {k: v[need] for k, v in feats.items() if k != name}
                score = self.scorer(query, ids, texts)
                feats[name][need] = score(iu[0][need], iu[1][need], sub)
            probs[iu] = st.prob(feats)
            return probs + probs.T
        stems = [self.retrieve.stems(t) for t in texts]
        pairs = [
            (i, j)
            for i in range(n)
            for j in range(i + 1, n)
            if stems[i]
            and stems[j]
            and len(stems[i] & stems[j]) / len(stems[i] | stems[j]) >= self.min_overlap
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
        """Which pairs go through the equivalence model when every pair is wanted (`equivalence`:
        a whole matrix): those it could merge (`ce_needed`) and `allowed` (may_merge), at most
        `max_ce_pairs` of them (the highest bounds)."""
        st = self.decisions.stack("equivalence")
        cut = max(self.cluster_cut(), self.ask_floor or 0.0)  # the cascade's gate, as `link`
        need = ce_needed(st, feats, cut, name=self.model_feature() or "ce")
        if allowed is not None:
            need &= allowed
        return at_most(need, st, feats, self.max_ce_pairs, self.model_feature() or "ce")

    def point_stems(self, query: Query, texts: Sequence[str]) -> list[set[str]]:
        """Each perspective's stems less the claim's: the words that carry its own point."""
        return [self.retrieve.stems(t) - query.stems for t in texts]


def both_orders(ce, claim: str, pairs, stack: Stack, feats: dict[str, np.ndarray], cut: float):
    """The cross-encoder's scores of `pairs`. With both orders, the reverse pass runs only
    for the pairs that could still reach the cluster cut: after one order the mean lies in
    [s/2, s/2 + 1/2], and where the stack stays below the cut across that range the pair
    cannot merge whatever the reverse says; it keeps s/2 (as if the reverse scored 0). So the
    clusters are exactly those of scoring both orders (tests/test_equivalence_ce.py)."""
    if ce.orders == 1 or not pairs:
        return ce.predict(claim, pairs)
    lo = ce.one_order(claim, pairs) / 2
    could = ce_needed(stack, feats, cut, lo=lo, hi=lo + 0.5)
    if could.any():
        rev = ce.one_order(claim, [x for x, c in zip(pairs, could, strict=True) if c], True)
        lo[could] += rev / 2
    return lo


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


def ce_needed(
    stack: Stack, feats: dict[str, np.ndarray], cut: float, lo=0.0, hi=1.0, name: str = "ce"
) -> np.ndarray:
    """Pairs whose equivalence the cross-encoder's score could lift to `cut` (the cluster cut):
    the stack's probability at the most favourable score (`lo` or `hi`, the ends of its range:
    0 and 1 before any pass) clears it. The others stay below the cut whatever the cross-encoder
    says, so complete-link never merges them and they are not scored (they get score 0): the
    clusters are exactly those of scoring every pair."""
    n = len(next(iter(feats.values())))
    ends = [np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)) for x in (lo, hi)]
    best = np.maximum(stack.prob({**feats, name: ends[0]}), stack.prob({**feats, name: ends[1]}))
    return best >= cut


def at_most(
    need: np.ndarray, stack: Stack, feats: dict[str, np.ndarray], cap: int | None, name="ce"
):
    """`need` cut down to the `cap` pairs with the highest bound (EngineConfig.equivalence_ce_max_pairs)."""
    if cap is None or need.sum() <= cap:
        return need
    best = stack.prob({**feats, name: np.ones(len(need))})
    order = np.argsort(-np.where(need, best, -1.0), kind="stable")
    out = np.zeros_like(need)
    out[order[:cap]] = True
    return out & need
