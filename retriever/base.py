"""The interface every retrieval backend implements (BM25 now; ColBERT and Elasticsearch beside it).

A backend owns one folder inside one pool of one index version. It maps text to item ids with scores;
the pool's `ItemStore` holds texts and metadata. Backends must be safe to clone file-by-file for the
copy-on-write updates of `perspect.core.index.layout`: `immutable_file` tells which files may be
hard-linked instead of copied.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from perspect.core.types import Item

ProgressFn = Callable[[int], None]  # called with the number of items just processed


@runtime_checkable
class VectorBackend(Protocol):
    """A backend holding one normalised vector per item. The engine asks for this, not for a
    retriever by name: its cosine features, equivalence stack and evidence margins read stored
    vectors, and any backend that keeps them (the dense one today) can serve them."""

    def vectors(self, ids: Sequence[str]) -> Any: ...

    def search_vectors(self, q: Any, k: int) -> list[list[tuple[str, float]]]: ...

    def embed_queries(self, texts: Sequence[str]) -> Any: ...


class Backend(ABC):
    kind: ClassVar[str]

    def __init__(self, folder: Path, config: dict[str, Any]):
        self.folder = Path(folder)
        self.config = dict(config)

    @classmethod
    @abstractmethod
    def create(cls, folder: Path, config: dict[str, Any]) -> Backend:
        """Make an empty backend in `folder` (which does not exist yet)."""

    @classmethod
    @abstractmethod
    def open(cls, folder: Path, config: dict[str, Any], writable: bool = False) -> Backend:
        """Open an existing backend folder."""

    @abstractmethod
    def add(self, items: Sequence[Item], progress: ProgressFn | None = None) -> None:
        """Add items; an id already present is replaced."""

    # whether `encode_documents` gives what `add_documents` stores (a model's output): such a
    # backend's documents may be encoded elsewhere (indexer.ray_build) and stored here
    encodes: ClassVar[bool] = False

    def encode_documents(self, texts: Sequence[str], progress: ProgressFn | None = None) -> Any:
        """The documents as this backend's model encodes them, in order (encoding backends)."""
        raise NotImplementedError(f"{self.kind} stores no model output")

    def add_documents(self, ids: Sequence[str], encoded: Any) -> None:
        """Store documents `encode_documents` encoded (anywhere); an id present is replaced."""
        raise NotImplementedError(f"{self.kind} stores no model output")

    @abstractmethod
    def delete(self, ids: Sequence[str]) -> None: ...

    @abstractmethod
    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """Top-k (id, score), best first."""

    @abstractmethod
    def count(self) -> int: ...

    def needs_rebuild(self) -> bool:
        """True when incremental updates have degraded the structure enough to rebuild it."""
        return False

    def commit(self) -> None:
        """Make pending writes durable; called once before a version is swapped in."""

    def close(self) -> None:
        """Release files and threads."""

    def warm(self) -> None:
        """Open what the first search will read (`Searcher.warm_in_background`): a no-op where
        opening is cheap."""

    @classmethod
    def on_published(cls, folder: Path, config: dict[str, Any]) -> None:
        """Called once the version holding `folder` is live (a remote backend moves its alias)."""

    @staticmethod
    def immutable_file(name: str) -> bool:
        """True if the file is never modified in place once written (so it can be hard-linked)."""
        return False

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        return {}
