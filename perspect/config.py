"""Where indexes and models live, and the typed configuration saved with every index."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perspect.errors import PerspectError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


PROJECT_ROOT = Path(__file__).resolve().parent.parent


def default_pair_model() -> Path:
    """`$PERSPECT_MODEL`, else the folder `perspect train` writes (models/pair in the project)."""
    return Path(os.environ.get("PERSPECT_MODEL") or PROJECT_ROOT / "models" / "pair")


def default_home() -> Path:
    """`$PERSPECT_HOME`, else `indexes/` in the working directory (the repository layout)."""
    return Path(os.environ.get("PERSPECT_HOME") or "indexes")


def resolve_home(home: str | Path | None) -> Path:
    return Path(home) if home else default_home()


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise PerspectError(
            f"bad index name {name!r}",
            hint="use letters, digits, '.', '_' or '-' (at most 64 characters)",
        )
    return name


def default_retrievers() -> tuple[str, ...]:
    """BM25 + dense (the packaged bi-encoder) + ColBERT when the project's trained ColBERT model
    exists. Dense is in by default: it adds recall to the fusion and its stored vectors serve
    equivalence and evidence linking at query time (measured in bench/retrieval.py)."""
    from retriever.colbert import default_model

    if os.environ.get("PERSPECT_RETRIEVERS"):  # e.g. "bm25" for fast scratch work and tests
        return tuple(r.strip() for r in os.environ["PERSPECT_RETRIEVERS"].split(",") if r.strip())
    return ("bm25", "dense", "colbert") if default_model().is_dir() else ("bm25", "dense")


@dataclass(frozen=True)
class IndexConfig:
    """How an index is built; saved in its manifest so a later add uses the same settings."""

    retrievers: tuple[str, ...] = ("bm25",)
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Precompute perspective -> evidence links at index time (indexer.links). Off, the engine
    # computes a search's links on the fly: slower searches, faster builds (scratch indexes).
    links: bool = True

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["retrievers"] = list(self.retrievers)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IndexConfig:
        return cls(
            retrievers=tuple(d.get("retrievers", ("bm25",))),
            backends=d.get("backends", {}),
            links=bool(d.get("links", True)),
        )
