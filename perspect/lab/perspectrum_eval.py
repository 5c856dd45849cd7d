"""The PERSPECTRUM T1-T5 evaluation of the retrieval + model pipeline (Chen et al. 2019, section 5).

`predict` runs the models once over a split and keeps raw probabilities; `score` applies thresholds.
The split is separated so training can tune thresholds on its held-out *train* claims with the very
code that evaluation runs, and evaluation never tunes on the split it reports.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perspect.core.datasets.metrics import PRF, binary_prf, claim_pr, macro
from perspect.core.datasets.perspectrum import Claim
from perspect.core.index.links import Link
from perspect.core.model.decision_stack import Stack
from perspect.core.model.decision_stack import fit as fit_stack
from perspect.core.model.decisions import UNCLEAR_TARGET, Decisions
from perspect.lab import reader_view
from perspect.pipeline.clusters import MODEL_FEATURES, complete_link, equivalence_features
from perspect.pipeline.evidence import link_features, ranked_links
from perspect.pipeline.linkage import lazy_complete_link
from perspect.reranker.roles import pair_for


@dataclass
class Predictions:
    """Raw signals of the pipeline over a split, before any threshold: tuning and scoring both
    read these, so a threshold is fitted on exactly what the engine computes."""

    t1: list[tuple[list[list[int]], list[int], dict[str, np.ndarray]]] = field(default_factory=list)
    t2: list[tuple[bool, float]] = field(default_factory=list)
    t3: list[tuple[bool, dict[str, float]]] = field(default_factory=list)
    # per cluster with resolvable evidence: (gold ids, its links, engine.group_links)
    t4: list[tuple[list[int], list[Link]]] = field(default_factory=list)
    # per claim: (first t3 row, number of perspectives, the (a, b) index pair of each row)
    t3_claims: list[tuple[int, int, list[tuple[int, int]]]] = field(default_factory=list)
    # per cluster with resolvable evidence: (gold ids, the paragraph of its cited sentence, the
    # top paragraph shown): how often the cited reason lies in a gold paragraph (pipeline.why)
    cites: list[tuple[list[int], str | None, str | None]] = field(default_factory=list)
    # per claim: (gold clusters, the ids a search keeps on the claim), where the engine has a
    # bearing decision (issue 71): T1 as a search keeps, beside T1 of the relevance cut alone
    t1_kept: list[tuple[list[list[int]], list[int]]] = field(default_factory=list)
    # per t3 row: the equivalence cross-encoder's int8 copy's score where the engine hands the
    # pairs past its fp32 budget to it (EngineConfig.equivalence_fp32_pairs), else empty
    t3_cheap: list[float] = field(default_factory=list)


def pid_of(item_id: str) -> int:
    """A retrieved perspective's PERSPECTRUM id, or a negative number of its own for one from
    another source (the debates' `debatepedia:...` in `make demo`'s index): never gold, so T1 on
    a mixed index counts it wrong rather than failing on it (an under-estimate: such a
    perspective may well bear on the claim)."""
    if item_id.isdigit():
        return int(item_id)
    return -1 - int.from_bytes(hashlib.blake2b(item_id.encode(), digest_size=6).digest(), "big")


def predict(
    engine,
    claims: Sequence[Claim],
    perspectives: dict[int, str],
    k_persp: int | None = None,
    tasks: Sequence[str] = ("relevance", "stance", "equivalence", "evidence"),
    progress: Callable[[int], None] | None = None,
    int8_tail: bool = False,
) -> Predictions:
    """Run the engine's stages over `claims` (T1 on its candidates; T2-T4 on the gold
    perspectives, as the paper defines them); `progress(1)` after each claim. `int8_tail`:
    also the int8 copy's score of every gold pair (`Predictions.t3_cheap`), for T3 as the
    default engine scores it (`t3_budgeted`); fitting never reads them."""
    pred = Predictions()
    model = engine.model
    cosine = engine.dense is not None
    for c in claims:
        gold = [list(cl.pids) for cl in c.clusters]
        query = None
        if "relevance" in tasks:
            hits, query = engine.candidates(c.text, k_persp)
            head = engine.judge(query, hits).head
            feats = engine.relevance_features(hits, query, head)
            pred.t1.append((gold, [pid_of(h.id) for h in hits], feats))
            if getattr(engine, "bearing", None) is not None:
                from types import SimpleNamespace

                kept, _ = engine.kept(c.text, SimpleNamespace(hits=hits, query=query))
                pred.t1_kept.append((gold, [pid_of(m.id) for m in kept]))
        gp = c.gold_sides(perspectives)
        support: dict[int, float] = {}
        if gp and ("stance" in tasks or cosine):
            probs = engine.stance(c.text, [perspectives[p] for p, _ in gp], [str(p) for p, _ in gp])
            support = {p: float(q) for (p, _), q in zip(gp, probs, strict=True)}
        if "stance" in tasks:
            pred.t2.extend((s, support[p]) for p, s in gp)
        if "equivalence" in tasks:
            cluster_of = {p: i for i, cl in enumerate(c.clusters) for p in cl.pids}
            pids = sorted(p for p in cluster_of if p in perspectives)
            pp = list(itertools.combinations(range(len(pids)), 2))
            if cosine and pp:
                v = engine.dense.vectors([str(p) for p in pids])
                sup = [support.get(p, 0.5) for p in pids] if support else None
                ij = (np.array([a for a, _ in pp]), np.array([b for _, b in pp]))
                if query is None or query.vector is None:
                    query = engine.query(c.text, vector=True)
                stems = engine.point_stems(query, [perspectives[p] for p in pids])
                ef = equivalence_features(v, None, ij, query.vector, stems)
                feats = [
                    {
                        **{k: float(ef[k][n]) for k in ("cosine", "resid", "jacc")},
                        **({"s_a": sup[a], "s_b": sup[b]} if sup else {}),
                    }
                    for n, (a, b) in enumerate(pp)
                ]
                # T3 is over every pair: all are scored (a budget applies when scoring: `score`)
                name, got = model_scores(engine, c.text, pids, perspectives, pp)
                for f, x in zip(feats, got if name else (), strict=False):
                    f[name] = float(x)
                overflow = engine.clusters.overflow
                cheap = overflow.model() if int8_tail and name == "ce" and overflow else None
                if cheap is not None:
                    texts = [perspectives[p] for p in pids]
                    pairs = [(texts[a], texts[b]) for a, b in pp]
                    pred.t3_cheap.extend(cheap.predict(c.text, pairs))
            elif pp:
                probs = model.predict(
                    [
                        pair_for(
                            "equivalence", c.text, perspectives[pids[a]], perspectives[pids[b]]
                        )
                        for a, b in pp
                    ],
                    ["equivalence"],
                )["equivalence"]
                feats = [{"head": float(q)} for q in probs]
            else:
                feats = []
            pred.t3_claims.append((len(pred.t3), len(pids), pp))
            pred.t3.extend(
                (cluster_of[pids[a]] == cluster_of[pids[b]], f)
                for (a, b), f in zip(pp, feats, strict=True)
            )
        if "evidence" in tasks and "evidence" in engine.searcher.pools:
            evidence = engine.searcher.store("evidence")
            for cl in c.clusters:
                gold_e = sorted(int(e) for e in evidence.existing([str(e) for e in cl.evidence]))
                if not gold_e:
                    continue  # unresolvable evidence is unknown, never negative
                group = [str(p) for p in cl.pids if p in perspectives]
                links = engine.group_links([group])[0][0]
                pred.t4.append((gold_e, links))
                pred.cites.append((gold_e, *reader_view.cited(engine, group, perspectives)))
        if progress:
            progress(1)
    return pred


def model_scores(engine, claim: str, pids, perspectives, pairs) -> tuple[str, np.ndarray]:
    """The equivalence model's score of every pair (a, b) of `pids`: the cross-encoder's ("ce")
    where the pair model names one, else the relation model's head ("rel") where the model's
    equivalence stack reads it, else none ("")."""
    texts = [perspectives[p] for p in pids]
    if engine.equivalence_ce is not None:
        return "ce", engine.equivalence_ce.predict(claim, [(texts[a], texts[b]) for a, b in pairs])
    if engine.clusters.model_feature() == "rel" and engine.clusters.relation is not None:
        return "rel", engine.clusters.relation.predict([str(p) for p in pids], texts, pairs)
    return "", np.zeros(0)


def relevance_probs(feats: dict[str, np.ndarray], stacks) -> np.ndarray:
    st = stacks.get("relevance")
    return st.prob(feats) if st is not None else 1 / (1 + np.exp(-feats["head"]))


def equivalence_probs(rows, stacks) -> np.ndarray:
    if not rows:
        return np.zeros(0)
    st = stacks.get("equivalence")
    if "cosine" in rows[0][1]:
        feats = pair_features(rows)
        return st.prob(feats) if st is not None else feats["cosine"]
    return np.array([f["head"] for _, f in rows])


def pair_features(rows) -> dict[str, np.ndarray]:
    """The engine's equivalence features from T3 rows (raw stance probabilities are kept in the
    rows so recalibrating the stance head also updates their agreement)."""
    feats = {
        k: np.array([f[k] for _, f in rows])
        for k in ("cosine", "resid", "jacc", *MODEL_FEATURES)
        if k in rows[0][1]
    }
    if "s_a" in rows[0][1]:
        a = np.array([f["s_a"] for _, f in rows])
        b = np.array([f["s_b"] for _, f in rows])
        feats["agree"] = a * b + (1 - a) * (1 - b)
    return feats


def t3_clustered(pred: Predictions, decisions: Decisions, cut: float) -> PRF:
    """T3 over the engine's *clusters* (complete-link, pairs `Decisions.may_merge` allows) rather
    than its pairwise decisions: what a user sees as merged phrasings."""
    probs = equivalence_probs(pred.t3, decisions.stacks)
    gold, got = [], []
    for start, n, pairs in pred.t3_claims:
        m, support = _claim_matrix(pred, start, n, pairs, probs)
        lab = complete_link(m, decisions.may_merge(support), cut)
        for k, (a, b) in enumerate(pairs):
            gold.append(pred.t3[start + k][0])
            got.append(bool(lab[a] == lab[b]))
    return binary_prf(gold, got)


def _claim_matrix(pred: Predictions, start: int, n: int, pairs, probs) -> tuple:
    m = np.zeros((n, n))
    support = np.zeros(n)
    for k, (a, b) in enumerate(pairs):
        f = pred.t3[start + k][1]
        m[a, b] = m[b, a] = probs[start + k]
        support[a], support[b] = f["s_a"], f["s_b"]
    return m, support


def t3_budgeted(
    pred: Predictions,
    decisions: Decisions,
    budget: int | None,
    fp32: int | None = None,
    floor: float | None = None,
) -> dict[str, PRF]:
    """T3 pairwise and over clusters when at most `budget` pairs of a claim are scored by the
    equivalence model, chosen as a search chooses them (pipeline.linkage: lazily, as the
    clusters form); the others count as its lowest score, as in a search. `fp32`: past that
    many pairs the cross-encoder's int8 copy scores them (`pred.t3_cheap`), as a search does
    (EngineConfig.equivalence_fp32_pairs). `floor`: the cascade's gate, as a search applies it
    (EngineConfig.equivalence_ask_floor): a pair whose bound stays under it is never asked."""
    st = decisions.stack("equivalence")
    name = next((f for f in MODEL_FEATURES if f in st.features), None) if st else None
    if name is None or not _clusterable(pred) or decisions.cluster is None:
        return {}
    feats = pair_features(pred.t3)
    exact = st.prob(feats)
    if fp32 is not None and name == "ce" and len(pred.t3_cheap) == len(pred.t3):
        cheap = st.prob({**feats, name: np.asarray(pred.t3_cheap, dtype=np.float64)})
    else:
        fp32, cheap = None, exact
    ends = [st.prob({**feats, name: np.full(len(exact), x)}) for x in (0.0, 1.0)]
    low, high = np.minimum(*ends), np.maximum(*ends)
    if floor is not None:  # never asked: the model's lowest score, as in pipeline.clusters
        high = np.where(high < floor, low, high)
    gold, pairwise, clustered = [], [], []
    for start, n, pairs in pred.t3_claims:
        if not pairs:
            continue
        rows = slice(start, start + len(pairs))
        m, support = _claim_matrix(pred, start, n, pairs, exact)
        m8, _ = _claim_matrix(pred, start, n, pairs, cheap)
        lo, _ = _claim_matrix(pred, start, n, pairs, low)
        hi, _ = _claim_matrix(pred, start, n, pairs, high)
        left = [n * n if fp32 is None else fp32]
        got = m.copy()  # the value each asked pair got (fp32, or int8 past the fp32 budget)

        def score(i, j, m=m, m8=m8, left=left, got=got):
            k = min(len(i), left[0])
            left[0] -= k
            out = np.concatenate([m[i[:k], j[:k]], m8[i[k:], j[k:]]])
            got[i, j] = got[j, i] = out
            return out

        linked = lazy_complete_link(
            lo, hi, decisions.may_merge(support), decisions.cluster, score, budget
        )
        asked = set(linked.scored)
        lab = linked.labels
        for k, (a, b) in enumerate(pairs):
            p = got[a, b] if (min(a, b), max(a, b)) in asked else low[rows][k]
            gold.append(pred.t3[start + k][0])
            pairwise.append(bool(p >= decisions.equivalence))
            clustered.append(bool(lab[a] == lab[b]))
    return {"T3": binary_prf(gold, pairwise), "T3_clusters": binary_prf(gold, clustered)}


def _clusterable(pred: Predictions) -> bool:
    return bool(pred.t3 and pred.t3_claims and "s_a" in pred.t3[0][1])


def _t1(rows, thr: float, stacks) -> PRF:
    return macro(
        claim_pr([p for p, s in zip(c, relevance_probs(f, stacks), strict=True) if s >= thr], g)
        for g, c, f in rows
    )


def _t4(rows, cut: float, delta: float = 0.0, k: int = 1, stack: Stack | None = None) -> PRF:
    """The evidence the engine marks as backing a cluster (engine.ranked_links) against the
    resolvable gold paragraphs."""
    out = []
    for g, links in rows:
        _, order, backed = ranked_links(links, stack, (cut, delta, k))
        got = [int(links[order[r]].evidence_id) for r in sorted(backed)]
        out.append(claim_pr(got, [[x] for x in g]))
    return macro(out)


def ir_t1(rows, k: int) -> PRF:
    """The paper's IR baseline for T1: the top-k retrieval candidates, no model."""
    return macro(claim_pr(c[:k], g) for g, c, _ in rows)


def tune_ir_k(rows, kmax: int = 50) -> int:
    return max(range(1, kmax + 1), key=lambda k: ir_t1(rows, k).f1)


def _pairs(labels, probs, thr: float) -> PRF:
    return binary_prf(list(labels), [p >= thr for p in probs])


def score(pred: Predictions, d: Decisions, budget: int | None = None) -> dict:
    """T1-T4 (and T3 over clusters) of `pred` under the decisions `d`, as the engine applies
    them (an index with dense vectors); `budget`: T3 as a search with at most that many pairs
    through the equivalence model (EngineConfig.equivalence_ce_max_pairs) scores it."""
    out: dict[str, Any] = {}
    stacks = d.stacks
    if pred.t1:
        out["T1"] = _t1(pred.t1, d.relevance, stacks)
    if pred.t1_kept:  # as a search keeps them: the bearing decision
        out["T1_kept"] = macro(claim_pr(k, g) for g, k in pred.t1_kept)
    if pred.t2:
        out["T2"] = _pairs([g for g, _ in pred.t2], [p for _, p in pred.t2], d.stance)
    if pred.t3:
        out["T3"] = _pairs(
            [g for g, _ in pred.t3], equivalence_probs(pred.t3, stacks), d.equivalence
        )
    if pred.t4:
        out["T4"] = _t4(pred.t4, *d.evidence_rule, stacks.get("evidence"))
    if _clusterable(pred) and d.cluster is not None:
        out["T3_clusters"] = t3_clustered(pred, d, d.cluster)
    if budget is not None:
        out.update(t3_budgeted(pred, d, budget))
    return out


def as_json(scores: dict[str, PRF], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {k: v.to_json() for k, v in scores.items()}
    if all(k in scores for k in ("T1", "T2", "T4")):
        t5 = scores["T1"].f1 * scores["T2"].f1 * scores["T4"].f1
        out["T5"] = {"f1": round(100 * t5, 2)}
    out.update(extra or {})
    return out


GRID = np.round(np.arange(0.02, 0.98, 0.01), 3)
RELEVANCE_FEATURES = ("head", "cosine", "log_rank", "rrf")  # see engine.relevance_features
# see engine.equivalence_features; "ce": the equivalence cross-encoder, where the model names one;
# "rel": else the relation model's equivalence head (pipeline.clusters.RelationPairs)
EQUIVALENCE_FEATURES = ("cosine", "agree", "resid", "jacc", *MODEL_FEATURES)


# (cut, delta, k) of engine.backed_links tried when tuning the evidence rule
EVIDENCE_RULES = [
    (float(c), d, k)
    for c in np.round(np.arange(0.0, 0.9, 0.02), 3)
    for d in (0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15)
    for k in (1, 2, 3)
]


MARGINS = (0.3, 0.4, 0.5, 0.6, 0.7, 1.0)
# The tightest stance margin whose T3-over-clusters F1 on the tune claims is within this of the
# best. The margin exists to keep confident contradictions apart, which F1 barely sees: with both
# cross-encoder orders, margins .7 and 1.0 tied on tune (74.46) and .6 scored 74.34, but .7
# merged "animals are entitled to rights" (P(support) .82) with "Animals don't have rights."
# (.21). Dev: .6 70.05, .7 70.61.
MARGIN_TOLERANCE = 0.0025


def tune(pred: Predictions, prior: dict[str, float] | None = None) -> Decisions:
    """Fit the pipeline's decisions on held-out claims: relevance, equivalence and evidence stacks
    (perspect.core.model.decision_stack) and every cut, each maximising its own task's F1. Cuts of
    tasks `pred` has no rows for keep their `prior` value."""
    thr: dict[str, float] = {}
    stacks: dict[str, Stack] = {}
    if pred.t1:
        names = [n for n in RELEVANCE_FEATURES if n in pred.t1[0][2]]
        X = np.vstack(
            [np.column_stack([f[n] for n in names]) for _, _, f in pred.t1 if len(f[names[0]])]
        )
        y = np.concatenate(
            [np.isin(c, [p for cl in g for p in cl]) for g, c, f in pred.t1 if len(c)]
        )
        st = fit_stack(names, X, y)
        best = float(max(GRID, key=lambda t: _t1(pred.t1, t, {"relevance": st}).f1))
        stacks["relevance"] = st.with_threshold(best)
        thr["relevance"] = best
    if pred.t2:
        labels, probs = [g for g, _ in pred.t2], [p for _, p in pred.t2]
        thr["stance"] = float(max(GRID, key=lambda t: _pairs(labels, probs, t).f1))
        # T2's F1 of "support" rewards calling everything support; the side a perspective is
        # shown on (and clustered within) should be right as often as possible instead.
        y, q = np.array(labels, dtype=bool), np.array(probs)
        thr["stance_side"] = float(max(GRID, key=lambda t: float(((q >= t) == y).mean())))
        # a side too close to call is shown as unclear (Decisions.stance_unclear)
        thr["stance_unclear"] = reader_view.fit_unclear(pred.t2, thr["stance_side"], UNCLEAR_TARGET)
    if pred.t3:
        labels = [g for g, _ in pred.t3]
        if "cosine" in pred.t3[0][1]:
            feats = pair_features(pred.t3)
            names = [n for n in EQUIVALENCE_FEATURES if n in feats]
            X = np.column_stack([feats[n] for n in names])
            stacks["equivalence"] = fit_stack(names, X, np.array(labels))
        probs = equivalence_probs(pred.t3, stacks)
        thr["equivalence"] = float(max(GRID, key=lambda t: _pairs(labels, probs, t).f1))
        if "equivalence" in stacks:
            stacks["equivalence"] = stacks["equivalence"].with_threshold(thr["equivalence"])
    if _clusterable(pred) and "stance" in thr:
        # the cut and the stance margin within which perspectives may merge (engine.may_merge)
        best = {}
        for m in MARGINS:
            d = Decisions.from_parts(thr, stacks).with_margin(m)
            best[m] = max(
                (t3_clustered(pred, d, float(c)).f1, -c)
                for c in np.round(np.arange(0.02, 0.6, 0.01), 3)
            )
        top = max(f1 for f1, _ in best.values())
        margin = min(m for m, (f1, _) in best.items() if f1 >= top - MARGIN_TOLERANCE)
        thr.update(cluster=-best[margin][1], cluster_margin=margin)
    if pred.t4:
        linked = [(g, links) for g, links in pred.t4 if links]
        st = None
        if linked:
            names = tuple(link_features(linked[0][1]))  # see engine.link_features
            X = np.vstack([np.column_stack(list(link_features(c).values())) for _, c in linked])
            y = np.concatenate([np.isin([int(x.evidence_id) for x in c], g) for g, c in linked])
            st = fit_stack(names, X, y)
        cut, delta, k = max(EVIDENCE_RULES, key=lambda r: (_t4(pred.t4, *r, st).f1, -r[2], -r[1]))
        thr.update(evidence=cut, evidence_delta=delta, evidence_k=k)
        stacks["evidence"] = (st or Stack((), (), 0.0)).with_threshold(cut)
    return Decisions.from_parts({**(prior or {}), **thr}, stacks)
