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
from reranker.model import TASKS, PairModel


@dataclass(frozen=True)
class Profile:
    name: str
    max_train_claims: int | None
    max_tune_claims: int | None
    caps: dict[str, int]
    batch_size: int = 32
    lr: float = 4e-5
    max_minutes: float = 30.0
    k_persp: int = 40
    k_evid: int = 10
    dev_eval: bool = True
    seed: int = 13
    warmup: float = 0.06
    extra: dict[str, Any] = field(default_factory=dict)


PROFILES = {
    "quick": Profile(
        "quick",
        max_train_claims=16,
        max_tune_claims=4,
        caps={"relevance": 96, "stance": 48, "equivalence": 48, "evidence": 24},
        batch_size=16,
        lr=5e-5,
        max_minutes=0.5,
        k_persp=8,
        k_evid=4,
        dev_eval=False,
    ),
    "full": Profile(
        "full",
        max_train_claims=None,
        max_tune_claims=None,
        caps={"relevance": 13000, "stance": 6500, "equivalence": 8000, "evidence": 3000},
        batch_size=32,
        lr=5e-5,
        max_minutes=26.0,
        k_persp=40,
        k_evid=10,
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
    opt = torch.optim.AdamW(net.parameters(), lr=profile.lr, weight_decay=0.01)
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
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
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


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def calibrate_and_tune(model: PairModel, pred) -> None:
    """Fit Platt scaling per head on the tune claims, then thresholds on calibrated scores."""
    from perspect import perspectrum_eval as pe

    labelled = {
        "relevance": [
            (s, c in {p for g in gold for p in g})
            for gold, cands, probs in pred.t1
            for c, s in zip(cands, probs, strict=True)
        ],
        "stance": [(p, g) for g, p in pred.t2],
        "equivalence": [(p, g) for g, p in pred.t3],
        "evidence": [
            (s, c in set(gold))
            for gold, cands, probs in pred.t4
            for c, s in zip(cands, probs, strict=True)
        ],
    }
    for task, rows in labelled.items():
        if task in model.manifest["tasks"] and rows:
            probs = np.array([r[0] for r in rows], dtype=np.float64)
            labels = np.array([float(r[1]) for r in rows])
            model.manifest["calibration"][task] = fit_platt(_logit(probs), labels)

    def recal(task: str, probs: np.ndarray) -> np.ndarray:
        return model.calibrate(task, _logit(np.asarray(probs, dtype=np.float64)))

    pred.t1 = [(g, c, recal("relevance", p)) for g, c, p in pred.t1]
    pred.t4 = [(g, c, recal("evidence", p)) for g, c, p in pred.t4]
    pred.t2 = [(g, float(recal("stance", np.array([p]))[0])) for g, p in pred.t2]
    pred.t3 = [(g, float(recal("equivalence", np.array([p]))[0])) for g, p in pred.t3]
    model.manifest["thresholds"].update(pe.tune(pred))
    if pred.t1:
        model.manifest["ir_baseline_k"] = pe.tune_ir_k(pred.t1, len(pred.t1[0][1]))
    model.manifest["tune_metrics"] = pe.as_json(pe.score(pred, model.manifest["thresholds"]))


def train(
    data_dir: str | Path,
    out: str | Path,
    tasks: Sequence[str] = TASKS,
    base: str | None = None,
    profile: str | Profile = "full",
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
) -> PairModel:
    from perspect import perspectrum_eval as pe
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
    train_claims = load_claims(data_dir, "train")
    order = sorted(train_claims, key=lambda c: hashlib.md5(str(c.cid).encode()).hexdigest())
    n_tune = max(1, math.ceil(0.15 * len(order)))
    tune_claims, fit_claims = order[:n_tune], order[n_tune:]
    if prof.max_train_claims:
        fit_claims = fit_claims[: prof.max_train_claims]
    if prof.max_tune_claims:
        tune_claims = tune_claims[: prof.max_tune_claims]

    with tempfile.TemporaryDirectory(prefix="perspect-train-") as tmp:
        with reporter.stage("indexing pools for negatives (bm25)"):
            searcher = pool_searcher(data_dir, tmp)

        with reporter.stage("building training pairs"):
            examples = build_examples(fit_claims, perspectives, evidence, searcher, rng, tasks)
        counts = {t: len(v) for t, v in examples.items()}
        batches: list[list[Example]] = []
        for t, ex in examples.items():
            ex = rng.sample(ex, min(len(ex), prof.caps.get(t, len(ex))))
            batches += length_bucketed_batches(ex, prof.batch_size, rng)
        rng.shuffle(batches)
        log(f"pairs available {counts}; batches {len(batches)}")

        with reporter.stage(f"loading base model {base or 'all-MiniLM-L6-v2 (packaged)'}"):
            model = PairModel.from_base(base, tasks)
        stats = train_steps(model, batches, prof, reporter, log)

        def run(claims, label: str):
            """The evaluation pipeline over `claims`, as `perspect eval` runs it."""
            with reporter.stage(label, total=len(claims)) as adv:
                return pe.predict(
                    model,
                    claims,
                    perspectives,
                    evidence,
                    searcher,
                    prof.k_persp,
                    prof.k_evid,
                    tasks,
                    progress=adv,
                )

        calibrate_and_tune(model, run(tune_claims, "calibrating on held-out train claims"))

        model.manifest.update(
            {
                "profile": asdict(prof),
                "data": data_fingerprints(data_dir),
                "claims": {"fit": len(fit_claims), "tune": len(tune_claims)},
                "pairs_available": counts,
                "training": stats,
                "retrieval_k": {"perspectives": prof.k_persp, "evidence": prof.k_evid},
            }
        )
        if prof.dev_eval:
            dpred = run(load_claims(data_dir, "dev"), "evaluating on dev")
            model.manifest["dev_metrics"] = pe.as_json(
                pe.score(dpred, model.manifest["thresholds"])
            )
        model.manifest["total_seconds"] = round(time.perf_counter() - t_start, 1)
        searcher.close()
        model.save(out)
    return model
