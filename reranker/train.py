"""Training the multi-head cross-encoder on PERSPECTRUM train (`perspect train`).

Budget-aware: the learning rate decays linearly in max(step fraction, wall-clock fraction), so a
profile ends on time on a slow machine instead of overrunning. Batches are length-bucketed (pairs of
similar length together) and padded per batch, which is what makes CPU training affordable.
15 % of the train claims are held out ("tune") for calibration and thresholds, so an evaluation on
dev never sees a threshold tuned on dev.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from perspect.progress import NullReporter, Reporter
from reranker.data import Example, build_examples
from reranker.model import TASKS, PairModel, freeze_lower
from reranker.stack import logit


@dataclass(frozen=True)
class Profile:
    name: str
    max_train_claims: int | None
    max_tune_claims: int | None
    caps: dict[str, int]
    batch_size: int = 32
    lr: float = 4e-5
    max_minutes: float = 30.0
    k_persp: int = 30
    retrievers: tuple[str, ...] = ("bm25", "dense")
    dev_eval: bool = True
    seed: int = 13
    warmup: float = 0.06
    extra: dict[str, Any] = field(default_factory=dict)
    # passes over a task's (capped) pairs; 1 where absent. Stance underfits in one pass (train
    # loss .59): two more passes from the full model took dev AUROC from .677 to .744.
    epochs: dict[str, int] = field(default_factory=dict)
    # top encoder layers trained (None: all). Three of MiniLM's six keep the shipped bundle small
    # (reranker.model.freeze_lower); a continued model keeps the same frozen floor.
    train_layers: int | None = 3


PROFILES = {
    "quick": Profile(
        "quick",
        max_train_claims=16,
        max_tune_claims=4,
        caps={"relevance": 96, "stance": 48, "equivalence": 48, "evidence": 24},
        batch_size=16,
        lr=1e-4,
        max_minutes=0.3,
        k_persp=8,
        retrievers=("bm25",),  # the dense encoder would cost ~3 min over the full pools
        dev_eval=False,
    ),
    # Continue a trained model (`--init`): more stance passes, with relevance pairs mixed in so the
    # shared encoder keeps what relevance needs. Equivalence and evidence heads are not trained
    # (the pipeline decides those from bi-encoder cosines and links; the heads are fallbacks).
    "continue": Profile(
        "continue",
        max_train_claims=None,
        max_tune_claims=None,
        caps={"relevance": 6000, "stance": 6500},
        batch_size=32,
        lr=4e-5,
        max_minutes=25.0,
        retrievers=("bm25",),  # decisions are re-fitted on the real index afterwards (calibrate)
        dev_eval=False,
        epochs={"stance": 3},
    ),
    "full": Profile(
        "full",
        max_train_claims=None,
        max_tune_claims=None,
        caps={"relevance": 13000, "stance": 6500, "equivalence": 8000, "evidence": 3000},
        batch_size=32,
        lr=1e-4,  # twice the full fine-tune's: only the top three layers move
        max_minutes=26.0,
    ),
}


def length_bucketed_batches(
    examples: Sequence[Example], batch_size: int, rng: random.Random
) -> list[list[Example]]:
    ex = list(examples)
    rng.shuffle(ex)
    chunk = batch_size * 50
    batches = []
    for s in range(0, len(ex), chunk):
        part = sorted(ex[s : s + chunk], key=lambda e: len(e.a) + len(e.b))
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    return batches


def fit_platt(logits: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Platt scaling p = sigmoid(a*z + b), fitted by LBFGS on held-out logits."""
    if len(set(labels.tolist())) < 2:
        return {"a": 1.0, "b": 0.0}
    z = torch.tensor(logits, dtype=torch.float64)
    y = torch.tensor(labels, dtype=torch.float64)
    a = torch.ones(1, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([a, b], max_iter=100)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(a * z + b, y)
        loss.backward()
        return loss

    opt.step(closure)
    return {"a": a.item(), "b": b.item()}


def train_steps(
    model: PairModel,
    batches: list[list[Example]],
    profile: Profile,
    reporter: Reporter,
    log: Callable[[str], None],
) -> dict[str, Any]:
    net = model.net
    net.train()
    params = [p for p in net.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=profile.lr, weight_decay=0.01)
    budget = profile.max_minutes * 60
    t0 = time.perf_counter()
    losses: dict[str, list[float]] = {}
    done = 0
    with reporter.stage("training", total=len(batches)) as adv:
        for step, batch in enumerate(batches):
            frac = max(step / len(batches), (time.perf_counter() - t0) / budget)
            if frac >= 1.0:
                log(f"time budget reached after {step}/{len(batches)} batches")
                break
            warm = profile.warmup
            scale = frac / warm if frac < warm else max(0.0, (1 - frac) / (1 - warm))
            for g in opt.param_groups:
                g["lr"] = profile.lr * scale
            task = batch[0].task
            enc = model.encode([(e.a, e.b) for e in batch], task)
            logits = net(enc, [task])[task]
            y = torch.tensor([e.label for e in batch], dtype=logits.dtype)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses.setdefault(task, []).append(loss.item())
            done += 1
            adv(1)
    net.eval()
    return {
        "batches_planned": len(batches),
        "batches_done": done,
        "train_seconds": round(time.perf_counter() - t0, 1),
        "final_loss": {t: round(float(np.mean(v[-50:])), 4) for t, v in losses.items()},
    }


def calibrate_and_tune(model: PairModel, pred) -> None:
    """Platt scaling per head on the tune claims, then the pipeline's stacks and thresholds
    (perspect.perspectrum_eval.tune) on the calibrated signals."""
    from perspect import perspectrum_eval as pe
    from perspect.engine import stacks_from

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
    for task, (z, y) in labelled.items():
        if task in model.manifest["tasks"] and len(z):
            model.manifest["calibration"][task] = fit_platt(z, y.astype(np.float64))

    def recal(task: str, z) -> np.ndarray:
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
    thr, stacks = pe.tune(pred)
    model.manifest["thresholds"].update(thr)
    model.manifest["stacks"] = {k: v.to_json() for k, v in stacks.items()}
    if pred.t1:
        model.manifest["ir_baseline_k"] = pe.tune_ir_k(pred.t1, len(pred.t1[0][1]))
    model.manifest["tune_metrics"] = pe.as_json(
        pe.score(pred, model.manifest["thresholds"], stacks_from(model.manifest))
    )


def tune_claims_of(data_dir: str | Path):
    """The held-out 15 % of train claims (by hashed claim id) and the rest."""
    from perspect.perspectrum import load_claims

    order = sorted(
        load_claims(data_dir, "train"), key=lambda c: hashlib.md5(str(c.cid).encode()).hexdigest()
    )
    n_tune = max(1, math.ceil(0.15 * len(order)))
    return order[:n_tune], order[n_tune:]


def recalibrate(
    model_dir: str | Path,
    data_dir: str | Path,
    index: str | None = None,
    home: str | Path | None = None,
    reporter: Reporter | None = None,
    retrievers: Sequence[str] = ("bm25", "dense"),
    equivalence_model: str | Path | None = None,
) -> PairModel:
    """Re-fit calibration, stacks and thresholds of a trained model on the tune claims, without
    training: for a pipeline change that adds signals (e.g. the dense cosine) to a saved model.
    `index` names an index of the PERSPECTRUM pools to run on; else a scratch one is built.
    `equivalence_model`: an equivalence cross-encoder to add to the equivalence stack ("none"
    drops the one the model names; None keeps it)."""
    from perspect import perspectrum_eval as pe
    from perspect.engine import Engine
    from perspect.perspectrum import load_perspectives, pool_searcher
    from reranker.equivalence_ce import ORDERS, attach
    from retriever.searcher import Searcher

    reporter = reporter or NullReporter()
    model = PairModel.load(model_dir)
    for t in model.manifest["tasks"]:
        model.manifest["calibration"][t] = {"a": 1.0, "b": 0.0}
    model.manifest.pop("stacks", None)  # re-fitted below; an old one may read a dropped signal
    if isinstance(equivalence_model, str) and equivalence_model.lower() == "none":
        model.manifest.pop("equivalence_ce", None)
    elif equivalence_model is not None:
        attach(model.manifest, model_dir, equivalence_model)
    elif "equivalence_ce" in model.manifest:  # kept; the re-fit scores pairs the current way
        model.manifest["equivalence_ce"]["orders"] = ORDERS
    tune_claims, _ = tune_claims_of(data_dir)
    perspectives = load_perspectives(data_dir)
    with tempfile.TemporaryDirectory(prefix="perspect-calib-") as tmp:
        if index:
            searcher = Searcher(index, home=home)
        else:
            with reporter.stage(f"indexing pools ({'+'.join(retrievers)})"):
                searcher = pool_searcher(data_dir, tmp, retrievers=tuple(retrievers))
        engine = Engine(searcher, model)
        with reporter.stage("calibrating on held-out train claims", total=len(tune_claims)) as adv:
            pred = pe.predict(engine, tune_claims, perspectives, progress=adv)
        calibrate_and_tune(model, pred)
        searcher.close()
    model.manifest["recalibrated"] = {"at": time.strftime("%Y-%m-%dT%H:%M:%S"), "index": index}
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
) -> PairModel:
    """Train `tasks` from `base`, or go on training the saved model at `init` (its other heads are
    kept as they are)."""
    from perspect import perspectrum_eval as pe
    from perspect.engine import Engine
    from perspect.perspectrum import (
        data_fingerprints,
        load_claims,
        load_evidence,
        load_perspectives,
        pool_searcher,
    )

    prof = PROFILES[profile] if isinstance(profile, str) else profile
    reporter = reporter or NullReporter()
    torch.manual_seed(prof.seed)
    torch.set_num_threads(os.cpu_count() or 1)
    rng = random.Random(prof.seed)
    data_dir = Path(data_dir)
    t_start = time.perf_counter()

    perspectives = load_perspectives(data_dir)
    evidence = load_evidence(data_dir) if "evidence" in tasks else {}
    tune_claims, fit_claims = tune_claims_of(data_dir)
    if prof.max_train_claims:
        fit_claims = fit_claims[: prof.max_train_claims]
    if prof.max_tune_claims:
        tune_claims = tune_claims[: prof.max_tune_claims]

    with tempfile.TemporaryDirectory(prefix="perspect-train-") as tmp:
        with reporter.stage(f"indexing pools ({'+'.join(prof.retrievers)})"):
            # links need dense vectors; without them (quick, continue) they are computed on the fly
            searcher = pool_searcher(
                data_dir, tmp, retrievers=prof.retrievers, links="dense" in prof.retrievers
            )

        with reporter.stage("building training pairs"):
            examples = build_examples(fit_claims, perspectives, evidence, searcher, rng, tasks)
        counts = {t: len(v) for t, v in examples.items()}
        batches: list[list[Example]] = []
        for t, ex in examples.items():
            ex = rng.sample(ex, min(len(ex), prof.caps.get(t, len(ex))))
            for _ in range(prof.epochs.get(t, 1)):
                batches += length_bucketed_batches(ex, prof.batch_size, rng)
        rng.shuffle(batches)
        log(f"pairs available {counts}; batches {len(batches)}")

        if init is not None:
            with reporter.stage(f"loading {init} to continue"):
                model = PairModel.load(init, tasks)
                keys = ("profile", "training", "saved_at", "dev_metrics")
                earlier = {k: model.manifest.pop(k, None) for k in keys}
                model.manifest["continued_from"] = {"path": str(init), **earlier}
        else:
            with reporter.stage(f"loading base model {base or 'all-MiniLM-L6-v2 (packaged)'}"):
                model = PairModel.from_base(base, tasks)
        freeze_lower(model.net.encoder, prof.train_layers)
        stats = train_steps(model, batches, prof, reporter, log)

        def run(claims, label: str):
            """The evaluation pipeline over `claims`, as `perspect eval` runs it."""
            engine = Engine(searcher, model)
            with reporter.stage(label, total=len(claims)) as adv:
                # every head the model has: a continued model keeps its other heads' decisions
                every = model.manifest["tasks"]
                return pe.predict(engine, claims, perspectives, prof.k_persp, every, progress=adv)

        calibrate_and_tune(model, run(tune_claims, "calibrating on held-out train claims"))

        model.manifest.update(
            {
                "profile": asdict(prof),
                "data": data_fingerprints(data_dir),
                "claims": {"fit": len(fit_claims), "tune": len(tune_claims)},
                "pairs_available": counts,
                "training": stats,
                "retrieval_k": {"perspectives": prof.k_persp},
            }
        )
        if prof.dev_eval:
            dpred = run(load_claims(data_dir, "dev"), "evaluating on dev")
            model.manifest["dev_metrics"] = pe.as_json(pe.score(dpred, *pe.thresholds_of(model)))
        model.manifest["total_seconds"] = round(time.perf_counter() - t_start, 1)
        searcher.close()
        model.save(out)
    return model
