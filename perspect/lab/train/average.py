"""Weight averaging of pair models fine-tuned from one another (a "model soup", Wortsman et al.
2022): `perspect train --task average --models A B --out OUT`.

Why: consecutive `--profile continue` rounds end in nearby minima, and their uniform average is a
better stance classifier than either, at no inference cost (one model, one forward pass). Measured
on dev with each model's decisions re-fitted on the tune claims: round 3 / round 4 / their
average, T2 binary F1 74.8 / 75.4 / 75.4, accuracy 74.6 / 73.5 / 74.8, AUROC 81.7 / 81.6 / 81.7;
T1 55.6 / 55.2 / 55.5. Models from different bases cannot be averaged, and this says so.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import torch

from perspect.core.errors import ModelError
from perspect.reranker import factory
from perspect.reranker.model import PairModel


def average(folders: Sequence[str | Path], out: str | Path) -> PairModel:
    """The uniform weight average of the models in `folders`, saved to `out`. Its manifest is the
    last model's (calibration, stacks, thresholds: re-fit them with `--task calibrate`) plus the
    list it was averaged from."""
    if len(folders) < 2:
        raise ModelError("averaging needs at least two models", hint="--models A B")
    models = [factory.load(["pair"], factory.TORCH, f).pair for f in folders]
    first = models[0]
    states = [m.net.state_dict() for m in models]
    for f, m, sd in zip(folders, models, states, strict=True):
        if m.manifest["tasks"] != first.manifest["tasks"] or sd.keys() != states[0].keys():
            raise ModelError(f"{f} has other heads or layers than {folders[0]}: cannot average")
        bad = [k for k in sd if sd[k].shape != states[0][k].shape]
        if bad:
            raise ModelError(f"{f} differs from {folders[0]} in shape at {bad[0]}: cannot average")
    avg = {
        k: torch.stack([sd[k].float() for sd in states]).mean(0).to(v.dtype)
        if v.is_floating_point()
        else v
        for k, v in states[0].items()
    }
    last = models[-1]
    last.net.load_state_dict(avg)
    last.manifest["averaged_from"] = {
        "models": [str(f) for f in folders],
        "saved_at": [m.manifest.get("saved_at") for m in models],
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    last.save(out)
    return last
