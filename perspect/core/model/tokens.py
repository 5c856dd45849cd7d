"""Tokenization from a model's `tokenizer.json` with the `tokenizers` library alone.

Why: importing transformers costs 3-5 s here (it pulls in scikit-learn, scipy and torch's
compiler through its generation and masking modules), most of a cold `perspect search`. Every
tokenizer Perspect ships is a fast tokenizer, and transformers' fast tokenizers are this same
library underneath: truncation and padding set the same way give the same ids (tested against
transformers in tests/test_runtime.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.errors import ModelError


class TextTokenizer:
    """Batches of texts or text pairs -> int64 arrays (input_ids, attention_mask,
    token_type_ids), padded to the longest row, as `AutoTokenizer(..., padding=True)` makes them."""

    def __init__(self, folder: str | Path, pad_token: str | None = None):
        from tokenizers import Tokenizer

        path = Path(folder) / "tokenizer.json"
        try:
            self._tok = Tokenizer.from_file(str(path))
        except Exception as e:  # a missing or damaged file: one clear line
            raise ModelError(f"cannot read the tokenizer {path}: {e}") from None
        self._tok.no_padding()
        self._tok.no_truncation()
        config = Path(folder) / "tokenizer_config.json"
        cfg = json.loads(config.read_text()) if config.is_file() else {}
        pad = pad_token or cfg.get("pad_token") or "[PAD]"
        self.pad_id = self.token_id(pad)
        self._lock = threading.Lock()  # truncation is tokenizer state

    def token_id(self, token: str) -> int:
        got = self._tok.token_to_id(token)
        if got is None:
            raise ModelError(f"the tokenizer has no token {token!r}")
        return int(got)

    def token_or(self, token: str, default: int) -> int:
        """The id of `token`, or `default` where the vocabulary lacks it."""
        got = self._tok.token_to_id(token)
        return default if got is None else int(got)

    def count(self, text: str) -> int:
        """Tokens of `text` with its special tokens, untruncated."""
        with self._lock:
            self._tok.no_truncation()
            return len(self._tok.encode(text).ids)

    def encode(
        self,
        a: Sequence[str],
        b: Sequence[str] | None = None,
        max_length: int | None = None,
        pad_to: int | None = None,
    ) -> tuple[dict[str, np.ndarray], list[Any]]:
        """Features of texts `a` (paired with `b`), truncated longest-first to `max_length`,
        padded to the longest row (or to `pad_to`); and the `tokenizers` encodings (offsets,
        sequence ids)."""
        inputs: list[Any] = list(a) if b is None else list(zip(a, b, strict=True))
        with self._lock:
            if max_length:
                self._tok.enable_truncation(max_length, strategy="longest_first")
            else:
                self._tok.no_truncation()
            encs = self._tok.encode_batch(inputs)
        width = max([len(e.ids) for e in encs] + [pad_to or 0])
        n = len(encs)
        ids = np.full((n, width), self.pad_id, dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        types = np.zeros((n, width), dtype=np.int64)
        for i, e in enumerate(encs):
            k = len(e.ids)
            ids[i, :k] = e.ids
            mask[i, :k] = 1
            types[i, :k] = e.type_ids
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}, encs
