"""Fitting trained models to the pipeline: the decisions (Platt scaling, stacks, cuts, the
unclear margin, evidence verdicts) fitted on the held-out train claims ("tune"), and the runs of
perspect.lab.train's trainers that need scratch indexes of the pools. The trainers themselves,
which only train, are perspect.lab.train.

Why here and not in reranker/: calibrating a model means running the whole pipeline (retrieval,
the engine's stages) on the tune claims, and the pipeline sits above the models. So the trainers
below only train, and this floor runs them, fits the decisions and saves the result.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.datasets.perspectrum import load_claims, load_perspectives, tune_claims_of
from perspect.core.errors import PerspectError
from perspect.core.model.decision_stack import logit
from perspect.core.model.decisions import UNCLEAR_TARGET, Decisions
from perspect.core.progress import NullReporter, Reporter
from perspect.lab import perspectrum_eval as pe
from perspect.lab import reader_view as rv
from perspect.lab.pools import pool_searcher
from perspect.lab.train import colbert as colbert_train
from perspect.lab.train import dense as dense_train
from perspect.lab.train import equivalence as equivalence_train
from perspect.lab.train.pair import Profile, fit_heads, fit_platt, resolve_profile
from perspect.pipeline import valence
from perspect.pipeline.engine import Engine
from perspect.pipeline.stance import StanceScorer
from perspect.reranker import factory, stance_trunk
from perspect.reranker.equivalence_ce import ORDERS, attach
from perspect.reranker.model import TASKS, PairModel
from perspect.retriever.searcher import Searcher


def _with_negatives_index(trainer, what: str):
    """A trainer that mines hard negatives with BM25 over the PERSPECTRUM pools, given a scratch
    index of them (links are not needed: only `search` is used)."""

    def run(
        data_dir: str | Path,
        out: str | Path,
        base: str | None = None,
        profile: Any = "full",
        reporter: Reporter | None = None,
        log=print,
    ) -> dict[str, Any]:
        reporter = reporter or NullReporter()
        with tempfile.TemporaryDirectory(prefix=f"perspect-{what}-") as tmp:
            with reporter.stage("indexing pools for hard negatives (bm25)"):
                searcher = pool_searcher(data_dir, tmp, links=False)
            try:
                return trainer(data_dir, out, searcher, base, profile, reporter=reporter, log=log)
            finally:
                searcher.close()

    run.__doc__ = f"`perspect train --task {what}`: {trainer.__doc__ or ''}"
    return run


train_dense = _with_negatives_index(dense_train.train_dense, "dense")
train_colbert = _with_negatives_index(colbert_train.train_colbert, "colbert")
train_equivalence = equivalence_train.train_equivalence  # needs no index


def calibrate_and_tune(model: PairModel, pred) -> None:
    """Platt scaling per head on the tune claims, then the pipeline's stacks and thresholds
    (perspect.lab.perspectrum_eval.tune) on the calibrated signals."""
    rel_z = [f["head"] for _, _, f in pred.t1]
    labelled = {
        "relevance": (
            np.concatenate(rel_z) if rel_z else np.zeros(0),
            np.concatenate([np.isin(c, [p for g in gold for p in g]) for gold, c, _ in pred.t1])
            if pred.t1
            else np.zeros(0),
        ),
        "stance": (logit(np.array([p for _, p in pred.t2])), np.array([g for g, _ in pred.t2])),
    }
    if pred.t3 and "head" in pred.t3[0][1]:
        labelled["equivalence"] = (
            logit(np.array([f["head"] for _, f in pred.t3])),
            np.array([g for g, _ in pred.t3]),
        )
    # with a stance trunk, the stance decision is its stack, fitted before the pass that made
    # `pred` (fit_stance_stack): those scores are final
    trunk = "stance_trunk" in model.manifest
    for task, (z, y) in labelled.items():
        if task == "stance" and trunk:
            continue
        if task in model.manifest["tasks"] and len(z):
            model.manifest["calibration"][task] = fit_platt(z, y.astype(np.float64))

    def recal(task: str, z) -> np.ndarray:
        if task == "stance" and trunk:
            return np.asarray(z, dtype=np.float64)
        c = model.manifest["calibration"][task]
        return c["a"] * np.asarray(z, dtype=np.float64) + c["b"]

    def recal_p(task: str, p: float) -> float:
        return float(1 / (1 + np.exp(-recal(task, logit(np.array([p])))[0])))

    for _, _, f in pred.t1:
        f["head"] = recal("relevance", f["head"])
    pred.t2 = [(g, recal_p("stance", p)) for g, p in pred.t2]
    for _, f in pred.t3:
        for key in ("s_a", "s_b"):  # stance probabilities behind the equivalence "agree" feature
            if key in f:
                f[key] = recal_p("stance", f[key])
        if "head" in f:
            f["head"] = recal_p("equivalence", f["head"])
    decisions = pe.tune(pred, prior=model.manifest["thresholds"])
    model.manifest.update(decisions.to_manifest())
    if pred.t1:
        model.manifest["ir_baseline_k"] = pe.tune_ir_k(pred.t1, len(pred.t1[0][1]))
    model.manifest["tune_metrics"] = pe.as_json(pe.score(pred, decisions))


def fit_stance_stack(
    model: PairModel, claims, perspectives: dict[int, str], trunk=None
) -> dict[str, float]:
    """The stance decision of a pair model with a trunk: a logistic regression over the trunk's
    logit and the pair head's, on the gold perspectives of `claims` (held-out train claims).
    Measured (bench/STUDIES.md): dev AUROC 83.6 -> 84.8, macro-F1 73.3 -> 76.8, flip 72 -> 75."""
    from sklearn.linear_model import LogisticRegression

    if trunk is None:
        trunk = factory.load(["trunk"], factory.TORCH, model).trunk
    support = StanceScorer(model, trunk)
    zs, ys = [], []
    for c in claims:
        gp = c.gold_sides(perspectives)
        if gp:
            texts = [perspectives[p] for p, _ in gp]
            zs.append(np.c_[logit(support.raw(c.text, texts)), logit(support.head(c.text, texts))])
            ys.extend(s for _, s in gp)
    y = np.array(ys)
    if len(set(ys)) < 2:
        raise PerspectError("the stance stack needs supporting and opposing gold perspectives")
    lr = LogisticRegression(C=1.0).fit(np.concatenate(zs), y)
    a, h = (float(v) for v in lr.coef_[0])
    return {"a": round(a, 6), "b": round(float(lr.intercept_[0]), 6), "head": round(h, 6)}


def _tune_searcher(data_dir, tmp, index, home, retrievers: Sequence[str], reporter) -> Searcher:
    """The index a re-fit runs on: the one named, else a scratch one of the pools in `tmp`."""
    if index:
        return Searcher(index, home=home)
    with reporter.stage(f"indexing pools ({'+'.join(retrievers)})"):
        return pool_searcher(data_dir, tmp, retrievers=tuple(retrievers))


def recalibrate(
    model_dir: str | Path,
    data_dir: str | Path,
    index: str | None = None,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    retrievers: Sequence[str] = ("bm25", "dense"),
    equivalence_model: str | Path | None = None,
    stance_model: str | Path | None = None,
) -> PairModel:
    """Re-fit calibration, stacks and thresholds of a trained model on the tune claims, without
    training: for a pipeline change that adds signals (e.g. the dense cosine) to a saved model.
    `index` names an index of the PERSPECTRUM pools to run on; else a scratch one is built.
    `equivalence_model`: an equivalence cross-encoder to add to the equivalence stack ("none"
    drops the one the model names; None keeps it). `stance_model`: a stance trunk whose P(support)
    replaces the stance head's ("none" drops it, None keeps the one named)."""
    reporter = reporter or NullReporter()
    model = factory.load(["pair"], factory.TORCH, model_dir).pair
    for t in model.manifest["tasks"]:
        model.manifest["calibration"][t] = {"a": 1.0, "b": 0.0}
    model.manifest.pop("stacks", None)  # re-fitted below; an old one may read a dropped signal
    # the cascade's gate was fitted on the old equivalence stack's scale: none until
    # bench/cascade.py --write fits it again on the new one (no gate: every pair asked)
    model.manifest.pop("cascade", None)
    if isinstance(equivalence_model, str) and equivalence_model.lower() == "none":
        model.manifest.pop("equivalence_ce", None)
    elif equivalence_model is not None:
        attach(model.manifest, model_dir, equivalence_model)
    elif "equivalence_ce" in model.manifest:  # kept; the re-fit scores pairs the current way
        model.manifest["equivalence_ce"]["orders"] = ORDERS
    if isinstance(stance_model, str) and stance_model.lower() == "none":
        model.manifest.pop("stance_trunk", None)
    elif stance_model is not None:
        stance_trunk.attach(model.manifest, model_dir, stance_model)
    tune_claims, _ = tune_claims_of(data_dir)
    perspectives = load_perspectives(data_dir)
    if "stance_trunk" in model.manifest:
        fit_stance_decision(model, tune_claims, perspectives)
    with tempfile.TemporaryDirectory(prefix="perspect-calib-") as tmp:
        searcher = _tune_searcher(data_dir, tmp, index, home, retrievers, reporter)
        engine = Engine.load(searcher, model)
        with reporter.stage("calibrating on held-out train claims", total=len(tune_claims)) as adv:
            pred = pe.predict(engine, tune_claims, perspectives, progress=adv)
        calibrate_and_tune(model, pred)
        model.manifest["decisions_retrievers"] = list(searcher.retrievers)
        searcher.close()
    model.manifest["recalibrated"] = {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "index": index}
    model.save(model_dir)
    return model


def fit_stance_decision(model: PairModel, claims, perspectives: dict[int, str]) -> None:
    """The stance stack (fit_stance_stack), then the weight of the claim's second reading over
    it (fit_valence), into the model's manifest."""
    trunk = factory.load(["trunk"], factory.TORCH, model).trunk  # loaded once for both fits
    stack = fit_stance_stack(model, claims, perspectives, trunk)
    model.manifest["stance_trunk"]["calibration"] = stack
    model.manifest["stance_trunk"]["valence"] = fit_valence(model, trunk, claims, perspectives)


VALENCE_WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))
# AUROC points under the best within which the smallest weight is taken: on the 11 tune claims
# that have a second reading (179 gold perspectives) the curve is flat from .5 to .9 (78.38 to
# 78.46), differences far inside its noise; the claim's own reading is kept as much as it can be
VALENCE_TOLERANCE = 0.5


def fit_valence(model: PairModel, trunk, claims, perspectives: dict[int, str]) -> dict[str, Any]:
    """The weight of a claim's second reading (pipeline.valence) in P(support): the one of
    VALENCE_WEIGHTS with the best AUROC over the gold perspectives of those of `claims` (held-out
    train claims) that have a second reading (the smallest within VALENCE_TOLERANCE of the
    best), 0 where none has one."""
    from sklearn.metrics import roc_auc_score

    model.manifest["stance_trunk"].pop("valence", None)  # each reading alone
    support = StanceScorer(model, trunk)
    ys, ps, qs, n = [], [], [], 0
    for c in claims:
        second = valence.of(c.text)
        gp = c.gold_sides(perspectives)
        if second is None or not gp:
            continue
        texts = [perspectives[p] for p, _ in gp]
        q = support(second.text, texts)
        ps.append(support(c.text, texts))
        qs.append(q if second.sign > 0 else 1 - q)
        ys.extend(s for _, s in gp)
        n += 1
    out: dict[str, Any] = {"weight": 0.0, "claims": n, "pairs": len(ys)}
    if len(set(ys)) < 2:
        return out
    y, p, q = np.array(ys), np.concatenate(ps), np.concatenate(qs)
    auroc = {str(w): round(100 * roc_auc_score(y, (1 - w) * p + w * q), 2) for w in VALENCE_WEIGHTS}
    best = max(auroc.values())
    out["weight"] = min(w for w in VALENCE_WEIGHTS if auroc[str(w)] >= best - VALENCE_TOLERANCE)
    out["tune_auroc"] = auroc
    return out


NEGATION_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5)


def fit_negation(model: PairModel, trunk, claims, perspectives: dict[int, str]) -> dict[str, Any]:
    """The weight of the claim's negation read the other way round in P(support)
    (StanceScorer.negated): the one of NEGATION_WEIGHTS with the best AUROC over the gold
    perspectives of `claims` (held-out train claims), the smallest within VALENCE_TOLERANCE of
    the best, so that a search pays its extra pass only where it gains."""
    from sklearn.metrics import roc_auc_score

    st = model.manifest["stance_trunk"]
    st["negation"] = {"weight": 1.0}  # the negation alone, as `negated` reads it
    support = StanceScorer(model, trunk)
    ys, ps, qs = [], [], []
    try:
        for c in claims:
            gp = c.gold_sides(perspectives)
            if not gp:
                continue
            texts = [perspectives[p] for p, _ in gp]
            st["negation"] = {"weight": 0.0}
            ps.append(support(c.text, texts))
            st["negation"] = {"weight": 1.0}
            qs.append(support.negated(c.text, texts, None, np.zeros(len(texts))))
            ys.extend(s for _, s in gp)
    finally:
        st.pop("negation", None)
    if len(set(ys)) < 2:
        return {"weight": 0.0, "pairs": len(ys)}
    y, p, q = np.array(ys), np.concatenate(ps), np.concatenate(qs)
    auroc = {
        str(w): round(100 * roc_auc_score(y, (1 - w) * p + w * q), 2) for w in NEGATION_WEIGHTS
    }
    best = max(auroc.values())
    w = min(w for w in NEGATION_WEIGHTS if auroc[str(w)] >= best - VALENCE_TOLERANCE)
    return {"weight": w, "pairs": len(ys), "tune_auroc": auroc}


def refit_unclear(model_dir: str | Path, data_dir: str | Path) -> PairModel:
    """Fit the weight of a claim's second reading (fit_valence) and the unclear margin
    (Decisions.stance_unclear) of a saved pair model on the tune claims' gold perspectives,
    keeping every other decision: `make models` step "unclear". The full calibration fits the
    margin too; this step gives a calibrated model both in minutes."""
    model = factory.load(["pair"], factory.TORCH, model_dir).pair
    side = Decisions.from_manifest(model.manifest).stance_side
    claims = tune_claims_of(data_dir)[0]
    trunk = factory.load(["trunk"], factory.TORCH, model).trunk
    perspectives = load_perspectives(data_dir)
    model.manifest["stance_trunk"]["valence"] = fit_valence(model, trunk, claims, perspectives)
    support = StanceScorer(model, trunk)
    rows = rv.stance_rows(support, claims, perspectives)
    margin = rv.fit_unclear(rows, side, UNCLEAR_TARGET)
    model.manifest["thresholds"]["stance_unclear"] = margin
    model.manifest.setdefault("tune_metrics", {})["sides"] = rv.side_coverage(rows, side, margin)
    model.save(model_dir)
    return model


def refit_sides(model_dir: str | Path, data_dir: str | Path, trunk_dir: str | Path) -> PairModel:
    """Name `trunk_dir` (the argument model, issue 61/62: one trunk for sides, verdicts, reasons
    and mining) as the pair model's stance trunk, and fit the decisions that read it on the tune
    claims' gold perspectives: the stack over its stance logit and the pair head's, the weight of
    a claim's second reading, the unclear margin. Every other decision is kept: `make models`
    step "sides", minutes where a full calibration takes an index build."""
    model = factory.load(["pair"], factory.TORCH, model_dir).pair
    stance_trunk.attach(model.manifest, model_dir, trunk_dir)
    claims, perspectives = tune_claims_of(data_dir)[0], load_perspectives(data_dir)
    fit_stance_decision(model, claims, perspectives)
    trunk = factory.load(["trunk"], factory.TORCH, model).trunk
    model.manifest["stance_trunk"]["negation"] = fit_negation(model, trunk, claims, perspectives)
    side = Decisions.from_manifest(model.manifest).stance_side
    rows = rv.stance_rows(StanceScorer(model, trunk), claims, perspectives)
    margin = rv.fit_unclear(rows, side, UNCLEAR_TARGET)
    model.manifest["thresholds"]["stance_unclear"] = margin
    model.manifest.setdefault("tune_metrics", {})["sides"] = rv.side_coverage(rows, side, margin)
    model.save(model_dir)
    return model


def refit_verdict(
    model_dir: str | Path,
    data_dir: str | Path,
    index: str | None = None,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
) -> PairModel:
    """Fit only the evidence verdict cut (Decisions.evidence_verdict) of a saved pair model on
    the tune claims' gold clusters, over the links of `index` (else a scratch BM25 + dense
    index of the pools), and name the joint reader as the cited reasons' reader: `make models`
    step "verdict"."""
    from dataclasses import replace

    reporter = reporter or NullReporter()
    model = factory.load(["pair"], factory.TORCH, model_dir).pair
    claims = tune_claims_of(data_dir)[0]
    with tempfile.TemporaryDirectory(prefix="perspect-verdict-") as tmp:
        searcher = _tune_searcher(data_dir, tmp, index, home, ("bm25", "dense"), reporter)
        engine = Engine.load(searcher, model)
        with reporter.stage("linking the tune claims' evidence", total=len(claims)) as adv:
            pred = pe.predict(
                engine, claims, load_perspectives(data_dir), tasks=("evidence",), progress=adv
            )
        searcher.close()
    decisions = Decisions.from_manifest(model.manifest)
    cut = rv.fit_verdict(pred.t4, decisions.stack("evidence"))
    model.manifest["thresholds"]["evidence_verdict"] = cut
    # the cited reasons are read back by the bundle's joint reader (perspect.pipeline.why
    # read_back) under its own compare cuts, where the bundle's comparator has the inference head
    model.manifest["reason_reader"] = {
        "entry": "comparator",
        "cuts": "the reader's decisions.compare: P(entail) and P(contradict) at 80 % precision "
        "on held-out inference pairs",
    }
    fitted = replace(decisions, evidence_verdict=cut)
    model.manifest.setdefault("tune_metrics", {})["verdicts"] = rv.verdict_accuracy(pred.t4, fitted)
    model.save(model_dir)
    return model


def train(
    data_dir: str | Path,
    out: str | Path,
    tasks: Sequence[str] = TASKS,
    base: str | None = None,
    profile: str | Profile = "full",
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
    init: str | Path | None = None,
    corrections: Sequence = (),
) -> PairModel:
    """Train `tasks` from `base` (or go on from the saved model at `init`), fit calibration and
    the pipeline's decisions on the tune claims, measure dev when the profile says so, save.
    `corrections`: readers' corrections as extra pairs (pair_data.Corrected)."""
    prof = resolve_profile(profile)
    reporter = reporter or NullReporter()
    data_dir = Path(data_dir)
    t_start = time.perf_counter()
    perspectives = load_perspectives(data_dir)
    tune_claims = tune_claims_of(data_dir)[0]
    if prof.max_tune_claims:
        tune_claims = tune_claims[: prof.max_tune_claims]

    with tempfile.TemporaryDirectory(prefix="perspect-train-") as tmp:
        with reporter.stage(f"indexing pools ({'+'.join(prof.retrievers)})"):
            # links need dense vectors; without them (quick, continue) they are computed on the fly
            searcher = pool_searcher(
                data_dir, tmp, retrievers=prof.retrievers, links="dense" in prof.retrievers
            )
        model = fit_heads(data_dir, searcher, tasks, base, prof, reporter, log, init, corrections)
        if "stance_trunk" in model.manifest:  # a continued model: its head changed under the stack
            fit_stance_decision(model, tune_claims, perspectives)

        def run(claims, label: str):
            """The evaluation pipeline over `claims`, as `perspect eval` runs it."""
            engine = Engine.load(searcher, model)
            with reporter.stage(label, total=len(claims)) as adv:
                # every head the model has: a continued model keeps its other heads' decisions
                every = model.manifest["tasks"]
                return pe.predict(engine, claims, perspectives, prof.k_persp, every, progress=adv)

        calibrate_and_tune(model, run(tune_claims, "calibrating on held-out train claims"))
        model.manifest["decisions_retrievers"] = list(searcher.retrievers)
        if prof.dev_eval:
            dpred = run(load_claims(data_dir, "dev"), "evaluating on dev")
            decisions = Decisions.from_manifest(model.manifest)
            model.manifest["dev_metrics"] = pe.as_json(pe.score(dpred, decisions))
        model.manifest["total_seconds"] = round(time.perf_counter() - t_start, 1)
        searcher.close()
        model.save(out)
    return model
