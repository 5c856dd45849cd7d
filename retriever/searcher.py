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
        self._backends.clear()
