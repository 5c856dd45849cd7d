"""Query encoding on ONNX Runtime (perspect.onnxrt), for the ColBERT and the dense retrievers.

Why: a query is one short sequence (16-64 tokens), where PyTorch eager spends most of its time in
per-operator overhead. On this 2-core CPU the same MiniLM query encoder took 18.8 ms a query in
PyTorch and 5.4 ms in ONNX Runtime, with vectors equal to 5e-7 (139 dev claims). Documents are
still encoded in PyTorch (PyLate, sentence-transformers): batches amortise the overhead there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from perspect import onnxrt

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def export(model, path: Path) -> None:
    """`model`'s token-embedding forward plus L2 normalisation, free in the sequence length."""
    import torch

    class QueryForward(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            feats = {"input_ids": input_ids, "attention_mask": attention_mask}
            feats["token_type_ids"] = token_type_ids
            out = self.m.forward(feats)["token_embeddings"]
            return torch.nn.functional.normalize(out, p=2, dim=-1)

    feats = model.tokenize(["a query to trace"], is_query=True)
    if any(n not in feats for n in INPUTS):
        raise ValueError(f"unsupported tokenizer outputs {sorted(feats)}")
    was_training = model.training
    try:
        onnxrt.export(QueryForward(model), {n: feats[n] for n in INPUTS}, path, {1: "length"})
    finally:
        model.train(was_training)


def session(model, folder: str | Path, fingerprint: str):
    """The query encoder's session (exported into `<folder>/onnx/` first if needed), or None."""
    return onnxrt.session(folder, "colbert-query", fingerprint, lambda p: export(model, p))


def encode(sess, features: dict[str, Any]) -> np.ndarray:
    """Token vectors of one tokenized query, (length, dim)."""
    return onnxrt.run(sess, features, INPUTS)[0]


def export_sentence(model, path: Path) -> None:
    """A sentence-transformers model's whole forward (encoder, pooling, any Normalize module)
    plus L2 normalisation, as `dense.encode` computes it; batch and length left free."""
    import torch

    class SentenceForward(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            feats = {"input_ids": input_ids, "attention_mask": attention_mask}
            feats["token_type_ids"] = token_type_ids
            out = self.m.forward(feats)["sentence_embedding"]
            return torch.nn.functional.normalize(out, p=2, dim=-1)

    feats = model.tokenize(["a query to trace", "and a second, longer one to trace"])
    if any(n not in feats for n in INPUTS):
        raise ValueError(f"unsupported tokenizer outputs {sorted(feats)}")
    was_training = model.training
    try:
        onnxrt.export(
            SentenceForward(model), {n: feats[n] for n in INPUTS}, path, {0: "batch", 1: "length"}
        )
    finally:
        model.train(was_training)


def sentence_session(model, folder: str | Path, fingerprint: str):
    """The dense encoder's session (exported into `<folder>/onnx/` first if needed), or None."""
    return onnxrt.session(folder, "dense-query", fingerprint, lambda p: export_sentence(model, p))


def encode_sentences(sess, features: dict[str, Any]) -> np.ndarray:
    """Normalised sentence vectors of tokenized texts, (n, dim) float32."""
    return onnxrt.run(sess, features, INPUTS).astype(np.float32, copy=False)
