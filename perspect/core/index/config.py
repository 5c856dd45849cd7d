"""Where indexes and models live, and the typed configuration saved with every index."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.errors import PerspectError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def resolve_home(home: str | Path | None) -> Path:
    """The folder holding indexes; refused when it names a file."""
    root = Path(home) if home else paths.home()
    if root.exists() and not root.is_dir():
        raise PerspectError(
            f"the index home {root} is a file, not a folder",
            hint="pass --home with a folder (or set PERSPECT_HOME to one)",
        )
    return root


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):  # no trailing newline
        raise PerspectError(
            f"bad index name {name!r}",
            hint="use letters, digits, '.', '_' or '-' (at most 64 characters)",
        )
    return name


def default_retrievers() -> tuple[str, ...]:
    """BM25 + dense (the packaged bi-encoder) + ColBERT when the project's trained ColBERT model
    exists. Dense is in by default: it adds recall to the fusion and its stored vectors serve
    equivalence and evidence linking at query time (measured in bench/retrieval.py)."""
    env = paths.env_retrievers()
    if env:
        return env
    return ("bm25", "dense", "colbert") if paths.colbert_model().is_dir() else ("bm25", "dense")


@dataclass(frozen=True)
class IndexConfig:
    """How an index is built; saved in its manifest so a later add uses the same settings."""

    retrievers: tuple[str, ...] = ("bm25",)
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Precompute perspective -> evidence links at index time (indexer.links). Off, the engine
    # computes a search's links on the fly: slower searches, faster builds (scratch indexes).
    links: bool = True
    # Store the trunk's lower-layer states of every perspective and document sentence at index
    # time (when the bundle has a trunk: perspect.reranker.stance_trunk). Off (the default since
    # issue 62), a search computes those of its kept candidates the first time it needs them and
    # keeps them with the index (perspect.pipeline.lower), and an idle server fills in the rest.
    stance_states: bool = False

    def for_pool(self, pool: str) -> tuple[str, ...]:
        """The retrievers that index `pool`: all of them, but a retriever whose options name
        its `pools` indexes those alone (the demo's ColBERT leaves out the evidence pool, which
        the pipeline reads through precomputed BM25 + dense links, never through ColBERT). The
        documents pool goes where the news pool goes: both hold article sentences, and an index
        built before documents existed names only news."""

        def indexes(kind: str) -> bool:
            pools = self.backends.get(kind, {}).get("pools", (pool,))
            return pool in pools or (pool == "documents" and "news" in pools)

        return tuple(k for k in self.retrievers if indexes(k))

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
            stance_states=bool(d.get("stance_states", False)),
        )
