"""Query encoding on ONNX Runtime (perspect.core.model.onnxrt), for the ColBERT and the dense
retrievers.

Why: a query is one short sequence (16-64 tokens), where PyTorch eager spends most of its time in
per-operator overhead. On this 2-core CPU the same MiniLM query encoder took 18.8 ms a query in
PyTorch and 5.4 ms in ONNX Runtime, with vectors equal to 5e-7 (139 dev claims). Documents are
still encoded in PyTorch (PyLate, sentence-transformers): batches amortise the overhead there.

`colbert_query` serves a ColBERT query without loading PyLate at all (and so without transformers:
~3 s of a cold start): the model's tokenizer, its query settings and the graph exported here.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.model import bundle, onnxrt

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _export(model, path: Path, output: str, feats, dynamic: dict[int, str]) -> None:
    """Export `model.forward(features)[output]`, L2-normalised on its last axis, for the
    tokenizer `feats` given as an example, with the axes in `dynamic` left free."""
    import torch

    class Forward(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            f = {"input_ids": input_ids, "attention_mask": attention_mask}
            f["token_type_ids"] = token_type_ids
            return torch.nn.functional.normalize(self.m.forward(f)[output], p=2, dim=-1)

    if any(n not in feats for n in INPUTS):
        raise ValueError(f"unsupported tokenizer outputs {sorted(feats)}")
    was_training = model.training
    try:
        onnxrt.export(Forward(model), {n: feats[n] for n in INPUTS}, path, dynamic)
    finally:
        model.train(was_training)


def export(model, path: Path) -> None:
    """A PyLate model's query token vectors, free in the sequence length."""
    feats = model.tokenize(["a query to trace"], is_query=True)
    _export(model, path, "token_embeddings", feats, {1: "length"})


def session(model, folder: str | Path, fingerprint: str):
    """The query encoder's session (exported into `<folder>/onnx/` first if needed), or None."""
    return onnxrt.session(folder, "colbert-query", fingerprint, lambda p: export(model, p))


def encode(sess, features: dict[str, Any]) -> np.ndarray:
    """Token vectors of one tokenized query, (length, dim)."""
    return onnxrt.run(sess, features, INPUTS)[0]


def export_sentence(model, path: Path) -> None:
    """A sentence-transformers model's whole forward (encoder, pooling, any Normalize module)
    plus L2 normalisation, as `dense.encode` computes it; batch and length left free."""
    feats = model.tokenize(["a query to trace", "and a second, longer one to trace"])
    _export(model, path, "sentence_embedding", feats, {0: "batch", 1: "length"})


def sentence_session(model, folder: str | Path, fingerprint: str):
    """The dense encoder's session (exported into `<folder>/onnx/` first if needed), or None."""
    return onnxrt.session(folder, "dense-query", fingerprint, lambda p: export_sentence(model, p))


def encode_sentences(sess, features: dict[str, Any]) -> np.ndarray:
    """Normalised sentence vectors of tokenized texts, (n, dim) float32."""
    return onnxrt.run(sess, features, INPUTS).astype(np.float32, copy=False)


class ColBERTQuery:
    """A ColBERT query as PyLate's `tokenize(is_query=True)` + forward make it (tested equal):
    wordpieces truncated to the query length less one, padded with [MASK] (query expansion),
    the [Q] marker put after [CLS], attention on the real tokens only; encoded by the graph
    `export` wrote."""

    def __init__(self, tokenizer, session, prefix_id: int):
        self.tokenizer, self.session, self.prefix_id = tokenizer, session, prefix_id
        self.doc_prefix_id: int | None = None  # documents too, where the model's config allows
        self.skiplist = None

    def features(self, text: str, length: int) -> dict[str, Any]:
        feats = self.tokenizer.encode([text.strip()], max_length=length - 1, pad_to=length - 1)[0]
        out = {}
        for key, fill in (("input_ids", self.prefix_id), ("attention_mask", 1)):
            v = feats[key]
            out[key] = np.concatenate([v[:, :1], np.full((1, 1), fill, v.dtype), v[:, 1:]], 1)
        out["token_type_ids"] = np.zeros_like(out["input_ids"])
        return out

    def encode(self, text: str, length: int) -> np.ndarray:
        """Token vectors of one query padded to `length`, (length, dim)."""
        return encode(self.session, self.features(text, length))

    def doc_features(self, text: str, length: int) -> dict[str, Any]:
        """A document as PyLate's `tokenize(is_query=False)` makes it: truncated to the document
        length less one, the [D] marker after [CLS], no padding (one document a call)."""
        feats = self.tokenizer.encode([text.strip()], max_length=length - 1)[0]
        out = {}
        for key, fill in (("input_ids", self.doc_prefix_id), ("attention_mask", 1)):
            v = feats[key]
            out[key] = np.concatenate([v[:, :1], np.full((1, 1), fill, v.dtype), v[:, 1:]], 1)
        out["token_type_ids"] = np.zeros_like(out["input_ids"])
        return out

    def encode_doc(self, text: str, length: int) -> np.ndarray:
        """A document's token vectors as PyLate's `encode(is_query=False)` gives them (tested
        equal): the graph's normalised vectors less the skiplist's tokens (punctuation)."""
        feats = self.doc_features(text, length)
        vecs = encode(self.session, feats)
        keep = ~np.isin(feats["input_ids"][0], self.skiplist)
        return vecs[keep]


def colbert_query(model: str | Path, fingerprint: str) -> ColBERTQuery | None:
    """The light query path of the ColBERT model folder `model`, or None where it cannot serve:
    no exported graph yet, or a model that does something else with queries (a prompt, no
    expansion, attention to the expansion tokens), which PyLate's own path then serves."""
    from perspect.core.model.tokens import TextTokenizer

    folder = Path(model)
    if not folder.is_dir():
        return None
    full = bundle.resolve(folder)
    cfg_file = full / "config_sentence_transformers.json"
    cfg = json.loads(cfg_file.read_text()) if cfg_file.is_file() else {}
    if (
        any((cfg.get("prompts") or {}).values())
        or not cfg.get("do_query_expansion", True)
        or cfg.get("attend_to_expansion_tokens", False)
        or not cfg.get("query_prefix")
    ):
        return None
    sess = onnxrt.existing(folder, "colbert-query", fingerprint)
    if sess is None:
        return None
    tok = TextTokenizer(full, pad_token="[MASK]")
    light = ColBERTQuery(tok, sess, tok.token_id(cfg["query_prefix"]))
    if cfg.get("document_prefix") and not cfg.get("prompts", {}).get("document"):
        light.doc_prefix_id = tok.token_or(cfg["document_prefix"], -1)  # as the query's: whole
        if light.doc_prefix_id < 0:
            light.doc_prefix_id = None  # PyLate's path then
        # PyLate's skiplist: each word's token id, the unknown token's for a word not in the
        # vocabulary (what `convert_tokens_to_ids` gives it)
        words = cfg.get("skiplist_words") or list(string.punctuation)
        unk = tok.token_id("[UNK]")
        light.skiplist = np.array([tok.token_or(w, unk) for w in words], dtype=np.int64)
    return light
