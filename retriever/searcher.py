"""The front door for reading an index: `Searcher(name).search(query, pool, k)`.

Opens the live version once (stores and backends are reused across queries) and turns backend
(id, score) pairs into typed `Hit`s with text and metadata from the pool's item store.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from indexer import manifest as mf
from indexer.layout import IndexDir
from indexer.store import ItemStore
from perspect.config import IndexConfig, check_name, resolve_home
from perspect.errors import PerspectError
from perspect.types import POOLS, Hit, HitList, validate_claim
from retriever.base import Backend, backend_class
from retriever.fusion import rrf

MAX_K = 1000
HYBRID = "hybrid"


class Searcher:
    def __init__(self, name: str, home: str | Path | None = None):
        self.name = check_name(name)
        self.dir = IndexDir(resolve_home(home), name)
        self.version = self.dir.current()
        self.manifest: dict[str, Any] = mf.load(self.version)
        self.config = IndexConfig.from_json(self.manifest["config"])
        self._stores: dict[str, ItemStore] = {}
        self._backends: dict[tuple[str, str], Backend] = {}

    @property
    def pools(self) -> dict[str, int]:
        return {p: e["count"] for p, e in self.manifest["pools"].items()}

    @property
    def retrievers(self) -> tuple[str, ...]:
        return self.config.retrievers

    @property
    def default_retriever(self) -> str:
        """Hybrid (RRF over all backends) when the index has more than one, else its only one."""
        return HYBRID if len(self.retrievers) > 1 else self.retrievers[0]

    def store(self, pool: str) -> ItemStore:
        self._check_pool(pool)
        if pool not in self._stores:
            self._stores[pool] = ItemStore(self.version / pool, readonly=True)
        return self._stores[pool]

    def backend(self, pool: str, kind: str) -> Backend:
        self._check_pool(pool)
        if kind not in self.retrievers:
            if kind == HYBRID:
                raise PerspectError(
                    f"index {self.name!r} has only {self.retrievers[0]}; hybrid needs two retrievers",
                    hint="rebuild with --retrievers bm25,colbert",
                )
            raise PerspectError(
                f"index {self.name!r} has no {kind} retriever",
                hint=f"available: {', '.join(self.retrievers)}",
            )
        key = (pool, kind)
        if key not in self._backends:
            self._backends[key] = backend_class(kind).open(
                self.version / pool / kind, self.config.backends.get(kind, {})
            )
        return self._backends[key]

    def search(
        self,
        query: str,
        pool: str = "perspectives",
        k: int = 20,
        retriever: str | None = None,
        rrf_k: int = 60,
        fusion_depth: int = 100,
    ) -> HitList:
        """Top-k of `pool`. `hybrid` fuses each backend's top `max(k, fusion_depth)` with RRF."""
        query = validate_claim(query)
        if not 1 <= int(k) <= MAX_K:
            raise PerspectError(f"k must be between 1 and {MAX_K}, got {k}")
        kind = retriever or self.default_retriever
        t0 = time.perf_counter()
        if kind == HYBRID and len(self.retrievers) > 1:
            depth = max(int(k), fusion_depth)
            runs = [self.backend(pool, b).search(query, depth) for b in self.retrievers]
            scored = rrf(runs, k=rrf_k, limit=int(k))
        else:
            scored = self.backend(pool, kind).search(query, int(k))
        return self.hits(query, pool, kind, scored, t0)

    def runs(
        self, query: str, pool: str, depth: int, query_vector=None
    ) -> list[list[tuple[str, float]]]:
        """Each backend's top `depth` for `query`; a dense backend takes `query_vector` when the
        caller already encoded the query (the engine reuses it for cosine features)."""
        out = []
        for kind in self.retrievers:
            b = self.backend(pool, kind)
            if kind == "dense" and query_vector is not None:
                out.append(b.search_vectors(query_vector[None, :], depth)[0])
            else:
                out.append(b.search(query, depth))
        return out

    def hits(
        self, query: str, pool: str, kind: str, scored: list[tuple[str, float]], t0: float
    ) -> HitList:
        """Typed hits, with text and metadata from the item store, for (id, score) pairs."""
        items = self.store(pool).get_many([i for i, _ in scored])
        hits = tuple(
            Hit(id=i, text=items[i].text, score=s, rank=r, pool=pool, metadata=items[i].metadata)
            for r, (i, s) in enumerate(((i, s) for i, s in scored if i in items), start=1)
        )
        return HitList(
            query=query,
            pool=pool,
            retriever=kind,
            hits=hits,
            took_ms=(time.perf_counter() - t0) * 1000,
        )

    def links(self):
        """The version's precomputed perspective -> evidence links, or None (see indexer.links)."""
        from indexer.links import Links

        if not hasattr(self, "_links"):
            self._links = Links(self.version) if Links.exists(self.version) else None
        return self._links

    def _check_pool(self, pool: str) -> None:
        if pool not in POOLS:
            raise PerspectError(f"unknown pool {pool!r}", hint=f"one of {', '.join(POOLS)}")
        if pool not in self.manifest["pools"]:
            raise PerspectError(
                f"index {self.name!r} has no {pool} pool",
                hint=f"add one: perspect index add --name {self.name} --{pool} FILE",
            )

    def close(self) -> None:
        for s in self._stores.values():
            s.close()
        for b in self._backends.values():
            b.close()
        self._stores.clear()
        if getattr(self, "_links", None) is not None:
            self._links.close()
            del self._links
        self._backends.clear()
