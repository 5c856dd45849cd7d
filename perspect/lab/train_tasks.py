"""`perspect train --task`: which trainer each task runs, its default output, and the profile it
trains with; `run` is what perspect.api.train hands over to.

The training stack (perspect.lab.fitting, perspect.lab.train.pair) imports torch at its top:
1.5 s that a search never needs, so this module imports it only when a task runs, and the API
can import this one at its own top.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.errors import PerspectError
from perspect.core.progress import NullReporter, Reporter
from perspect.reranker.model import TASKS

ENCODERS = {  # --task -> (trainer in perspect.lab.fitting, default output folder, what it trains)
    "colbert": ("train_colbert", paths.colbert_model, "ColBERT"),
    "dense": ("train_dense", lambda: paths.models_dir() / "dense", "the dense encoder"),
    "equivalence-ce": (
        "train_equivalence",
        paths.equivalence_model,
        "the equivalence cross-encoder",
    ),
}
TRAIN_TASKS = (*TASKS, "all", *ENCODERS, "calibrate", "average", "claimdiff")


@dataclass(frozen=True)
class TrainResult:
    """What `train` wrote and its manifest (the model's record: data, timing, metrics)."""

    task: str
    out: Path
    what: str
    manifest: dict[str, Any]


def run(
    task: str = "all",
    data: str | Path = Path("data") / "perspectrum",
    out: str | Path | None = None,
    *,
    base: str | None = None,
    profile: str = "full",
    init: str | Path | None = None,
    models: Sequence[str | Path] = (),
    index: str | None = None,
    home: str | Path | None = None,
    equivalence_model: str | None = None,
    stance_model: str | None = None,
    train_layers: int | str | None = None,
    max_minutes: float | None = None,
    reporter: Reporter | None = None,
    log: Callable[[str], None] = print,
) -> TrainResult:
    """Train one model (or re-fit the pair model's decisions: "calibrate"; average models:
    "average"); see `perspect train --help` for the tasks. For the pair model, `train_layers`
    overrides the profile's (top N encoder layers, or "all": a full fine-tune, at half the
    rate, the rate full fine-tunes were tuned at) and `max_minutes` its training budget."""
    from perspect.lab import fitting
    from perspect.lab.train.pair import PROFILES

    reporter = reporter or NullReporter()
    if task == "claimdiff":
        return _train_comparator(data, out, base, profile, max_minutes, reporter, log)
    if task in ENCODERS:
        trainer, default_out, what = ENCODERS[task]
        out = Path(out) if out else default_out()
        m = getattr(fitting, trainer)(
            data, out, base=base, profile=profile, reporter=reporter, log=log
        )
        return TrainResult(task, out, what, m)
    out = Path(out or paths.pair_model())
    if task == "average":
        from perspect.lab.train.average import average

        average(list(models), out)
        return TrainResult(task, out, f"the average of {len(models)} models", {})
    if task == "calibrate":
        model = fitting.recalibrate(
            out,
            data,
            index,
            home,
            reporter,
            equivalence_model=equivalence_model,
            stance_model=stance_model,
        )
        return TrainResult(task, out, "the pair model's decisions", model.manifest)
    if task not in TRAIN_TASKS:
        raise PerspectError(f"unknown task {task!r}", hint=f"known: {', '.join(TRAIN_TASKS)}")
    if profile == "continue" and not init:
        raise PerspectError(
            "--profile continue goes on training a saved model", hint="pass --init models/pair"
        )
    tasks = TASKS if task == "all" else (task,)
    if init and task == "all":
        tasks = tuple(t for t in TASKS if t in PROFILES[profile].caps)
    prof = _profile(profile, train_layers, max_minutes)
    model = fitting.train(data, out, tasks, base, prof, reporter, log, init)
    return TrainResult(task, out, ", ".join(tasks), model.manifest)


def _train_comparator(data, out, base, profile, max_minutes, reporter, log):
    from perspect.lab import claimdiff

    if profile not in claimdiff.PROFILES:
        raise PerspectError(
            f"the comparator has no {profile!r} profile", hint="--profile quick, full or claimdiff"
        )
    prof = claimdiff.resolve_profile(profile, max_minutes=max_minutes)
    out = Path(out or paths.comparator_model())
    m = claimdiff.train_comparator(
        data, out, base=base, profile=prof, reporter=reporter, log=log,
        inference=paths.INFERENCE_DATA,
    )  # fmt: skip
    return TrainResult("claimdiff", out, "the ClaimDiff comparator", m)


def _profile(name: str, train_layers: int | str | None, max_minutes: float | None):
    from perspect.lab.train.pair import PROFILES

    prof = PROFILES[name]
    if train_layers == "all":
        prof = dataclasses.replace(prof, train_layers=None, lr=prof.lr / 2)
    elif train_layers is not None:
        if not isinstance(train_layers, int) or train_layers < 1:
            raise PerspectError(f"--train-layers takes a number >= 1 or 'all', got {train_layers}")
        prof = dataclasses.replace(prof, train_layers=train_layers)
    if max_minutes is not None:
        if max_minutes <= 0:
            raise PerspectError(f"--max-minutes must be positive, got {max_minutes}")
        prof = dataclasses.replace(prof, max_minutes=float(max_minutes))
    return prof
