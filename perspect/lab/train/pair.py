"""Training the multi-head cross-encoder on PERSPECTRUM train (`perspect train`).

Budget-aware: the learning rate decays linearly in max(step fraction, wall-clock fraction), so a
profile ends on time on a slow machine instead of overrunning. Batches are length-bucketed (pairs of
similar length together) and padded per batch, which is what makes CPU training affordable.
15 % of the train claims are held out ("tune") for calibration and thresholds, so an evaluation on
dev never sees a threshold tuned on dev; those are fitted by perspect.lab.fitting, which runs the
pipeline (a floor above this one).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from perspect.core.datasets.perspectrum import (
    data_fingerprints,
    load_evidence,
    load_perspectives,
    tune_claims_of,
)
from perspect.core.progress import NullReporter, Reporter
from perspect.lab.train.pair_data import Corrected, Example, build_examples, correction_examples
from perspect.reranker.model import TASKS, PairModel
from perspect.reranker.pair_net import freeze_lower


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
    # (reranker.pair_net.freeze_lower); a continued model keeps the same frozen floor.
    train_layers: int | None = 3
    # every stance pair also with the claim negated and the label swapped (lab.train.pair_data)
    contrast_stance: bool = False


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
        contrast_stance=True,
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


def resolve_profile(profile: str | Profile) -> Profile:
    return PROFILES[profile] if isinstance(profile, str) else profile


def fit_heads(
    data_dir: str | Path,
    searcher,
    tasks: Sequence[str] = TASKS,
    base: str | None = None,
    profile: str | Profile = "full",
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
    init: str | Path | None = None,
    corrections: Sequence[Corrected] = (),
) -> PairModel:
    """Train `tasks` from `base`, or go on training the saved model at `init` (its other heads are
    kept as they are), on pairs mined with `searcher` (an index of the pools: hard negatives),
    plus the pairs readers' `corrections` make (pair_data.correction_examples).
    Calibration and the pipeline's decisions are fitted above this floor (perspect.lab.fitting)."""
    prof = resolve_profile(profile)
    reporter = reporter or NullReporter()
    torch.manual_seed(prof.seed)
    torch.set_num_threads(os.cpu_count() or 1)
    rng = random.Random(prof.seed)
    data_dir = Path(data_dir)

    perspectives = load_perspectives(data_dir)
    evidence = load_evidence(data_dir) if "evidence" in tasks else {}
    tune_claims, fit_claims = tune_claims_of(data_dir)
    if prof.max_train_claims:
        fit_claims = fit_claims[: prof.max_train_claims]
    if prof.max_tune_claims:
        tune_claims = tune_claims[: prof.max_tune_claims]

    with reporter.stage("building training pairs"):
        examples = build_examples(
            fit_claims,
            perspectives,
            evidence,
            searcher,
            rng,
            tasks,
            contrast_stance=prof.contrast_stance,
        )
        fixed = correction_examples(corrections, tasks)
        for t, ex in fixed.items():
            examples[t] += ex
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
    model.manifest.update(
        {
            "profile": asdict(prof),
            "data": data_fingerprints(data_dir),
            "claims": {"fit": len(fit_claims), "tune": len(tune_claims)},
            "pairs_available": counts,
            "corrections_used": {t: len(v) for t, v in fixed.items() if v},
            "training": stats,
            "retrieval_k": {"perspectives": prof.k_persp},
        }
    )
    return model
