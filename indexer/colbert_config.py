"""ColBERT index settings, and reading them from a RAGatouille / colbert-ai index folder.

Perspect indexes with PyLate, but many users have ColBERT indexes made by RAGatouille or
stanford colbert-ai. Their `plan.json` / `metadata.json` hold a `config` object (ColBERTConfig);
`from_colbert_json` maps the settings that mean the same thing here and reports the rest, so
`perspect index build --colbert-config plan.json` rebuilds an equivalent index with PyLate.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perspect.core.errors import InputError

# colbert-ai key -> our field. Everything else in the file is run bookkeeping (paths, GPUs, ranks)
# or training-only (lr, nway, ...), listed as ignored.
_MAP = {
    "checkpoint": "checkpoint",
    "dim": "dim",
    "nbits": "nbits",
    "doc_maxlen": "doc_maxlen",
    "query_maxlen": "query_maxlen",
    "kmeans_niters": "kmeans_niters",
    "similarity": "similarity",
    "ncells": "ncells",
    "centroid_score_threshold": "centroid_score_threshold",
    "ndocs": "ndocs",
    "attend_to_mask_tokens": "attend_to_mask_tokens",
}


@dataclass(frozen=True)
class ColBERTConfig:
    checkpoint: str | None = (
        None  # None: the model Perspect trains (`perspect train --task colbert`)
    )
    dim: int = 128
    nbits: int = 2
    doc_maxlen: int = 256
    query_maxlen: int = 32
    kmeans_niters: int = 4
    similarity: str = "cosine"
    ncells: int | None = None
    centroid_score_threshold: float | None = None
    ndocs: int | None = None
    attend_to_mask_tokens: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ImportedConfig:
    config: ColBERTConfig
    ignored: tuple[str, ...]
    source: str


def from_colbert_json(path: str | Path) -> ImportedConfig:
    """Read colbert-ai `plan.json` / `metadata.json` (or a RAGatouille index folder holding one)."""
    p = Path(path)
    if p.is_dir():
        for name in ("plan.json", "metadata.json"):
            if (p / name).is_file():
                p = p / name
                break
        else:
            raise InputError(str(p), "no plan.json or metadata.json in this folder")
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(str(p), "no such file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(str(p), f"not a JSON ColBERT config: {e}") from None
    cfg = raw.get("config", raw) if isinstance(raw, dict) else None
    if not isinstance(cfg, dict) or not ({"dim", "nbits", "doc_maxlen", "checkpoint"} & set(cfg)):
        raise InputError(str(p), "no ColBERT settings found (expected a 'config' object)")
    values: dict[str, Any] = {}
    for key, ours in _MAP.items():
        if key in cfg and cfg[key] is not None:
            values[ours] = cfg[key]
    bad = [
        k
        for k in ("dim", "nbits", "doc_maxlen", "query_maxlen", "kmeans_niters")
        if k in values and (not isinstance(values[k], int) or values[k] <= 0)
    ]
    if bad:
        raise InputError(str(p), f"invalid value for {', '.join(bad)}")
    if values.get("nbits") not in (None, 1, 2, 4, 8):
        raise InputError(str(p), f"nbits must be 1, 2, 4 or 8, got {values['nbits']}")
    if values.get("similarity") not in (None, "cosine", "l2"):
        raise InputError(str(p), f"unknown similarity {values['similarity']!r}")
    ignored = tuple(sorted(k for k in cfg if k not in _MAP))
    return ImportedConfig(ColBERTConfig(**values), ignored, str(p))
