"""The public Python API.

from perspect import Perspect
p = Perspect.open("default")
p.search("animals should have lawful rights")
"""

from __future__ import annotations

from pathlib import Path

from perspect.types import HitList
from retriever.searcher import Searcher


class Perspect:
    """A handle on one built index; cheap to query repeatedly (files are opened once)."""

    def __init__(self, searcher: Searcher):
        self._searcher = searcher

    @classmethod
    def open(cls, name: str = "default", home: str | Path | None = None) -> Perspect:
        return cls(Searcher(name, home))

    @property
    def name(self) -> str:
        return self._searcher.name

    @property
    def pools(self) -> dict[str, int]:
        """Item count per pool."""
        return self._searcher.pools

    @property
    def manifest(self) -> dict:
        return self._searcher.manifest

    def search(
        self, claim: str, k: int = 20, pool: str = "perspectives", retriever: str | None = None
    ) -> HitList:
        """Top-k items of `pool` for `claim` (BM25 retrieval; the full pipeline builds on this)."""
        return self._searcher.search(claim, pool=pool, k=k, retriever=retriever)

    def close(self) -> None:
        self._searcher.close()

    def __enter__(self) -> Perspect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
