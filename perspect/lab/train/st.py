"""What the sentence-transformers trainers of Perspect share (dense and ColBERT encoders).

Why a module: both run a SentenceTransformerTrainer under a wall-clock budget on this CPU and
save a model folder with `perspect_manifest.json` so that a crash mid-save never leaves a
half-written model where the index builder would load it.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.model import bundle
from perspect.reranker.pair_net import freeze_lower


def budget_callback(budget_seconds: float, advance: Callable[[int], Any]):
    """A TrainerCallback that stops training after `budget_seconds` and reports each step."""
    from transformers import TrainerCallback

    started = time.perf_counter()

    class Budget(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            advance(1)
            if time.perf_counter() - started > budget_seconds:
                control.should_training_stop = True
            return control

    return Budget()


def triple_datasets(rows: dict[str, list[tuple[str, str, str]]], columns: tuple[str, str, str]):
    """One `datasets.Dataset` per non-empty kind of (anchor, positive, negative) rows."""
    from datasets import Dataset

    return {
        name: Dataset.from_dict({col: [r[i] for r in rs] for i, col in enumerate(columns)})
        for name, rs in rows.items()
        if rs
    }


def training_args(tmp: str | Path, cross_encoder: bool = False, **kw):
    """CPU trainer arguments with no checkpoints, no reporting and no tqdm (we report ourselves)."""
    if cross_encoder:
        from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments as Args
    else:
        from sentence_transformers import SentenceTransformerTrainingArguments as Args

    return Args(
        output_dir=str(Path(tmp) / "run"),
        save_strategy="no",
        report_to="none",
        logging_steps=50,
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **kw,
    )


def train_cross_encoder(
    rows: list[tuple[str, str, float]],
    base: str,
    tmp: str | Path,
    *,
    max_length: int,
    batch_size: int,
    lr: float,
    epochs: int = 1,
    seed: int = 13,
    max_seconds: float = float("inf"),
    advance: Callable[[int], Any] = lambda n=1: None,
    train_layers: int | None = None,
):
    """A binary sentence-transformers CrossEncoder trained on (text a, text b, label) rows under a
    wall-clock budget; returns (model, trainer, train result). Loading `base` may raise OSError."""
    import torch
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss

    torch.manual_seed(seed)
    data = Dataset.from_dict({k: [r[i] for r in rows] for i, k in enumerate(("a", "b", "label"))})
    model = CrossEncoder(base, num_labels=1, max_length=max_length, device="cpu")
    freeze_lower(model.model.base_model, train_layers)
    loss = BinaryCrossEntropyLoss(model)
    args = training_args(
        tmp,
        cross_encoder=True,
        num_train_epochs=epochs,
        per_device_train_batch_size=batch_size,
        learning_rate=lr,
        warmup_steps=0.1,
        seed=seed,
    )
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=data,
        loss=loss,
        callbacks=[budget_callback(max_seconds, advance)],
    )
    return model, trainer, trainer.train()


def training_record(trainer, result, planned_steps: int, train_seconds: float) -> dict[str, Any]:
    return {
        "steps": trainer.state.global_step,
        "planned_steps": planned_steps,
        "train_seconds": round(train_seconds, 1),
        "final_loss": round(float(result.training_loss), 4),
    }


RECORD = ("base_model", "data", "profile", "training", "total_seconds", "dev_metrics", "code")


def save_model(
    model, out: str | Path, manifest: dict[str, Any], t_start: float, role: str, base: str | None
) -> None:
    """Save the full model into a staging folder, then pack what training changed into `out`, a
    bundle entry (perspect.core.model.bundle) swapped in whole: `out` is whole or absent."""
    out = Path(out)
    manifest["total_seconds"] = round(time.perf_counter() - t_start, 1)
    manifest["code"] = bundle.code_version()
    with tempfile.TemporaryDirectory(prefix="perspect-save-") as tmp:
        full = Path(tmp) / out.name
        model.save(str(full))
        (full / "perspect_manifest.json").write_text(json.dumps(manifest, indent=2))
        bundle.pack(
            full,
            out,
            name=out.name,
            role=role,
            base_id=base or paths.PACKAGED_MINILM,
            record={k: manifest[k] for k in RECORD if k in manifest},
        )
