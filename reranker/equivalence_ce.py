"""A dedicated claim-conditioned equivalence cross-encoder: the model the engine loads (its trainer
is perspect.lab.train.equivalence, `perspect train --task equivalence-ce`).

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
here), so the engine scores only the pairs that could change a cluster (perspect.pipeline.clusters,
`ce_needed`). Pair models fitted with one order keep it (`load_for` reads `orders`).

Saved folder: the CrossEncoder (Hugging Face format) plus `perspect_manifest.json`.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.errors import ModelError
from perspect.core.model import onnxrt
from perspect.core.model.tokens import TextTokenizer
from perspect.reranker.served import ServedModel

FORMAT = "perspect.equivalence-ce/1"
MANIFEST = "perspect_manifest.json"
ORDERS = 2  # orders a pair is scored in (averaged); fits made before `orders` used 1
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def canonical(a: str, b: str) -> tuple[str, str]:
    """One order for a pair, so that it gets one score wherever it appears (engine, evaluation)."""
    return (a, b) if a <= b else (b, a)


def pair_input(claim: str, a: str, b: str) -> tuple[str, str]:
    return (f"{claim} [SEP] {a}", b)


PAIRS_KEPT = 20_000  # scored pairs an instance remembers (a few MB)


class EquivalenceModel(ServedModel):
    """P(two perspectives make the same point with respect to the claim).

    Scored by the CrossEncoder (PyTorch), or by its exported graph (`serving`, `for_inference`:
    ONNX Runtime with a `tokenizers` tokenizer, no torch in the process; same scores, tested)."""

    FORMAT = FORMAT
    MANIFEST = MANIFEST
    WHAT = "equivalence cross-encoder"
    TRAIN = "perspect train --task equivalence-ce"
    GRAPH = "equivalence"
    ROLE = "equivalence"
    WEIGHTS = ("*.safetensors", "config.json")

    def __init__(
        self,
        model,
        manifest: dict[str, Any],
        source: Path | None = None,
        orders: int = ORDERS,
        origin: Path | None = None,
    ):
        if orders not in (1, 2):
            raise ModelError(f"a pair is scored in 1 or 2 orders, not {orders}")
        self.model = model  # a CrossEncoder, or None when served by ONNX Runtime
        self.manifest = manifest
        self.source = source
        self.orders = orders
        self.origin = origin or source  # the folder asked for: where its graph lives
        # (claim, a, b, reverse) -> score of pairs scored lately: a claim searched again (the
        # same pairs asked) pays no pass; per instance, so an int8 copy keeps its own
        self._memo: OrderedDict[tuple[str, str, str, bool], float] = OrderedDict()
        self._memo_lock = threading.Lock()
        self._onnx = None  # (session, tokenizer)

    @classmethod
    def load(cls, folder: str | Path, orders: int = ORDERS) -> EquivalenceModel:
        full, manifest = cls.read(folder)
        from sentence_transformers.cross_encoder import CrossEncoder
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()  # "Loading weights" bars would garble our output
        model = CrossEncoder(str(full), device="cpu", max_length=manifest["max_length"])
        model.model.eval()
        return cls(model, manifest, full, orders, Path(folder))

    @classmethod
    def serving(
        cls, folder: str | Path, int8: bool = False, orders: int = ORDERS
    ) -> EquivalenceModel | None:
        """The saved cross-encoder on ONNX Runtime without torch (`int8`: its int8 copy), or
        None when that graph is not made for these weights yet (`load(...).for_inference()`
        makes it)."""
        origin = Path(folder)
        full, manifest = cls.read(origin)
        sess = cls.graph(origin, int8)
        if sess is None:
            return None
        ce = cls(None, cls.precision(manifest, int8), full, orders, origin)
        ce._onnx = (sess, TextTokenizer(full))
        return ce

    def for_inference(self, int8: bool = False) -> EquivalenceModel:
        """This cross-encoder on ONNX Runtime (graph exported into `<folder>/onnx/` at the first
        call; `int8`: and its int8 copy made), or itself where that cannot be done (no folder,
        a PyTorch-quantized copy)."""
        if self.serves(int8):
            return self
        if self.model is None:  # served: the other precision is served from the same folder
            return EquivalenceModel.open(self.origin, int8=int8, orders=self.orders)
        if self.origin is None or self.manifest.get("quantized"):
            return self

        def make(path: Path) -> None:
            import torch

            class Scores(torch.nn.Module):
                def __init__(self, m):
                    super().__init__()
                    self.m = m

                def forward(self, input_ids, attention_mask, token_type_ids):
                    out = self.m(
                        input_ids=input_ids,
                        attention_mask=attention_mask,
                        token_type_ids=token_type_ids,
                    ).logits
                    return torch.sigmoid(out[:, 0])

            ex = self.model.tokenizer(
                [["a claim [SEP] one point", "another point"]] * 2,
                padding=True,
                truncation=True,
                return_tensors="pt",
            )
            onnxrt.export(
                Scores(self.model.model), {n: ex[n] for n in INPUTS}, path, {0: "batch", 1: "len"}
            )

        sess = self.make_graph(make, int8)
        if sess is None:
            return self
        manifest = self.precision(self.manifest, int8)
        ce = EquivalenceModel(self.model, manifest, self.source, self.orders, self.origin)
        ce._onnx = (sess, TextTokenizer(self.source))
        return ce

    def quantized(self) -> EquivalenceModel:
        """A copy with int8 dynamic quantization of the linear layers (CPU inference; the weights
        on disk stay float32). Its cost in T3 is measured by `perspect eval --quantize`."""
        import copy

        import torch

        if self.model is None:  # served by ONNX Runtime: int8 is PyTorch's, so load the model
            return EquivalenceModel.load(self.origin, self.orders).quantized()
        model = copy.deepcopy(self.model)  # a CrossEncoder is a Module: a shallow copy shares it
        torch.ao.quantization.quantize_dynamic(
            model.model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True
        )
        manifest = {**self.manifest, "quantized": "dynamic-int8"}
        return EquivalenceModel(model, manifest, self.source, self.orders, self.origin)

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
        keys = [(claim, a, b, reverse) for a, b in ordered]
        with self._memo_lock:
            known = {i: self._memo[k] for i, k in enumerate(keys) if k in self._memo}
        out = np.zeros(len(keys), dtype=np.float64)
        todo = [i for i in range(len(keys)) if i not in known]
        if todo:
            out[todo] = self._passes(claim, [ordered[i] for i in todo], reverse)
            with self._memo_lock:
                for i in todo:
                    self._memo[keys[i]] = float(out[i])
                while len(self._memo) > PAIRS_KEPT:
                    self._memo.popitem(last=False)
        for i, v in known.items():
            out[i] = v
        return out

    def _passes(self, claim: str, ordered: list[tuple[str, str]], reverse: bool) -> np.ndarray:
        inputs = [pair_input(claim, *((b, a) if reverse else (a, b))) for a, b in ordered]
        if self._onnx is None:
            got = self.model.predict(inputs, batch_size=64, show_progress_bar=False)
            return np.asarray(got, dtype=np.float64)
        sess, tok = self._onnx
        out = np.zeros(len(inputs), dtype=np.float64)
        order = sorted(range(len(inputs)), key=lambda i: len(inputs[i][0]) + len(inputs[i][1]))
        step = onnxrt.PAIR_BATCH  # length-sorted batches: little padding
        for s in range(0, len(order), step):
            idx = order[s : s + step]
            a, b = zip(*(inputs[i] for i in idx), strict=True)
            feats = tok.encode(a, b, int(self.manifest["max_length"]))[0]
            out[idx] = onnxrt.run(sess, feats, INPUTS)
        return out


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


def load_for(
    manifest: dict[str, Any], model_dir: Path | None, serving: bool = False, int8: bool = False
) -> EquivalenceModel | None:
    """The cross-encoder a pair model's manifest names, or None when it names none; `serving`:
    on ONNX Runtime without torch where its graph (`int8`: int8 copy) is already made."""
    ref = manifest.get("equivalence_ce")
    if not ref:
        return None
    path = Path(ref["path"])
    if not path.is_absolute() and model_dir is not None:
        path = Path(model_dir) / path
    # the stack was fitted on scores made this way; fits before `orders` existed used one order
    orders = int(ref.get("orders", 1))
    served = EquivalenceModel.serving(path, int8, orders) if serving else None
    ce = served or EquivalenceModel.load(path, orders)
    if ce.manifest.get("created_at") != ref.get("created_at"):
        raise ModelError(
            f"the equivalence cross-encoder in {path} was retrained after the pair model's "
            "decisions were fitted with it",
            hint=f"perspect train --task calibrate --equivalence-model {path}",
        )
    return ce
