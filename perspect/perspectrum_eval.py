"""The PERSPECTRUM T1-T5 evaluation of the retrieval + model pipeline (Chen et al. 2019, section 5).

`predict` runs the models once over a split and keeps raw probabilities; `score` applies thresholds.
The split is separated so training can tune thresholds on its held-out *train* claims with the very
code that evaluation runs, and evaluation never tunes on the split it reports.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from perspect.evaluation import PRF, binary_prf, claim_pr, macro
from perspect.perspectrum import Claim
from reranker.roles import pair_for

TASK_NAMES = {
    "T1": "perspective relevance",
    "T2": "stance",
    "T3": "equivalence",
    "T4": "evidence",
    "T5": "overall",
}


@dataclass
class Predictions:
    t1: list[tuple[list[list[int]], list[int], np.ndarray]] = field(default_factory=list)
    t2: list[tuple[bool, float]] = field(default_factory=list)
    t3: list[tuple[bool, float]] = field(default_factory=list)
    t4: list[tuple[list[int], list[int], np.ndarray]] = field(default_factory=list)


def predict(
    model,
    claims: Sequence[Claim],
    perspectives: dict[int, str],
    evidence: dict[int, str],
    searcher,
    k_persp: int = 50,
    k_evid: int = 10,
    tasks: Sequence[str] = ("relevance", "stance", "equivalence", "evidence"),
    progress: Callable[[int], None] | None = None,
    evidence_retriever: str | None = None,
) -> Predictions:
    """Run retrieval and the models over `claims`; `progress(1)` after each claim."""
    pred = Predictions()
    for c in claims:
        gold = [list(cl.pids) for cl in c.clusters]
        if "relevance" in tasks:
            cands = [int(h.id) for h in searcher.search(c.text, "perspectives", k_persp).hits]
            pairs = [pair_for("relevance", c.text, perspectives[p]) for p in cands]
            pred.t1.append((gold, cands, model.predict(pairs, ["relevance"])["relevance"]))
        if "stance" in tasks:
            gp = [
                (p, cl.stance == "SUPPORT")
                for cl in c.clusters
                for p in cl.pids
                if p in perspectives
            ]
            probs = model.predict(
                [pair_for("stance", c.text, perspectives[p]) for p, _ in gp], ["stance"]
            )["stance"]
            pred.t2.extend((s, float(q)) for (_, s), q in zip(gp, probs, strict=True))
        if "equivalence" in tasks:
            cluster_of = {p: i for i, cl in enumerate(c.clusters) for p in cl.pids}
            pids = sorted(p for p in cluster_of if p in perspectives)
            pp = list(itertools.combinations(pids, 2))
            probs = model.predict(
                [pair_for("equivalence", c.text, perspectives[a], perspectives[b]) for a, b in pp],
                ["equivalence"],
            )["equivalence"]
            pred.t3.extend(
                (cluster_of[a] == cluster_of[b], float(q))
                for (a, b), q in zip(pp, probs, strict=True)
            )
        if "evidence" in tasks and evidence:
            for cl in c.clusters:
                gold_e = [e for e in cl.evidence if e in evidence]
                if not gold_e or cl.pids[0] not in perspectives:
                    continue  # unresolvable evidence is unknown, never negative
                persp = perspectives[cl.pids[0]]
                q = f"{c.text} {persp}"
                hits = searcher.search(q, "evidence", k_evid, retriever=evidence_retriever).hits
                cands = [int(h.id) for h in hits]
                probs = model.predict(
                    [pair_for("evidence", c.text, persp, evidence[e]) for e in cands], ["evidence"]
                )["evidence"]
                pred.t4.append((gold_e, cands, probs))
        if progress:
            progress(1)
    return pred


def _t1(rows, thr: float) -> PRF:
    return macro(
        claim_pr([p for p, s in zip(c, pr, strict=True) if s >= thr], g) for g, c, pr in rows
    )


def _t4(rows, thr: float) -> PRF:
    return macro(
        claim_pr([e for e, s in zip(c, pr, strict=True) if s >= thr], [[x] for x in g])
        for g, c, pr in rows
    )


def ir_t1(rows, k: int) -> PRF:
    """The paper's IR baseline for T1: the top-k BM25 candidates, no model."""
    return macro(claim_pr(c[:k], g) for g, c, _ in rows)


def tune_ir_k(rows, kmax: int = 50) -> int:
    return max(range(1, kmax + 1), key=lambda k: ir_t1(rows, k).f1)


def _pairs(rows, thr: float) -> PRF:
    return binary_prf([g for g, _ in rows], [p >= thr for _, p in rows])


def score(pred: Predictions, thresholds: dict[str, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pred.t1:
        out["T1"] = _t1(pred.t1, thresholds["relevance"])
    if pred.t2:
        out["T2"] = _pairs(pred.t2, thresholds["stance"])
    if pred.t3:
        out["T3"] = _pairs(pred.t3, thresholds["equivalence"])
    if pred.t4:
        out["T4"] = _t4(pred.t4, thresholds["evidence"])
    return out


def as_json(scores: dict[str, PRF], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {k: v.to_json() for k, v in scores.items()}
    if all(k in scores for k in ("T1", "T2", "T4")):
        t5 = scores["T1"].f1 * scores["T2"].f1 * scores["T4"].f1
        out["T5"] = {"f1": round(100 * t5, 2)}
    out.update(extra or {})
    return out


GRID = np.round(np.arange(0.05, 0.96, 0.025), 3)


def tune(pred: Predictions) -> dict[str, float]:
    """Thresholds maximising each task's own metric (T1, T3, T4 F1; stance stays at calibrated 0.5
    unless another cut is clearly better for F1)."""
    best: dict[str, float] = {}
    for task, rows, fn in (
        ("relevance", pred.t1, _t1),
        ("stance", pred.t2, _pairs),
        ("equivalence", pred.t3, _pairs),
        ("evidence", pred.t4, _t4),
    ):
        if rows:
            best[task] = float(max(GRID, key=lambda t, rows=rows, fn=fn: fn(rows, t).f1))
    return best
