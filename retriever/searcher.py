"""The front door for reading an index: `Searcher(name).search(query, pool, k)`.

Opens the live version once (stores and backends are reused across queries) and turns backend
(id, score) pairs into typed `Hit`s with text and metadata from the pool's item store.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from perspect.core import background
from perspect.core.errors import NotInIndex, PerspectError
from perspect.core.index import integrity
from perspect.core.index import manifest as mf
from perspect.core.index.config import IndexConfig, check_name, resolve_home
from perspect.core.index.layout import IndexDir, Lease
from perspect.core.index.store import ItemStore
from perspect.core.result import Provenance, SourceContext
from perspect.core.types import ARTICLE_POOLS, POOLS, Hit, HitList, validate_claim
from perspect.retriever.base import Backend, VectorBackend
from perspect.retriever.fusion import rrf
from perspect.retriever.registry import backend_class

T = TypeVar("T")

MAX_K = 1000
HYBRID = "hybrid"
_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def concurrently(calls: list[Callable[[], Any]]) -> list[Any]:
    """Results of `calls`, the first run in the caller's thread and the others in a shared pool.
    Why: a hybrid query's retrievers wait in native code (PLAID's torch kernels, ONNX Runtime,
    tantivy, faiss) that releases the GIL, so they overlap even on 2 cores: perspective retrieval
    p50 26-33 ms one after the other, 22-25 ms overlapped (60 dev claims, one run).
    When one call fails, the others are waited for before the error goes up: the caller closes
    the backends next, which must not happen under a search still running in native code."""
    global _POOL
    if len(calls) <= 1:
        return [c() for c in calls]
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="perspect-retrieve")
    futures = [_POOL.submit(c) for c in calls[1:]]
    try:
        first = calls[0]()
    finally:
        wait(futures)
    return [first] + [f.result() for f in futures]


class _View:
    """One pinned version of the index: its manifest and everything opened from it, and the lease
    that keeps its files on disk while anyone reads through it."""

    def __init__(self, lease: Lease):
        self.lease = lease
        self.version: Path = lease.version
        self.manifest: dict[str, Any] = mf.load(self.version)
        self.config = IndexConfig.from_json(self.manifest["config"])
        self.stores: dict[str, ItemStore] = {}
        self.backends: dict[tuple[str, str], Backend] = {}
        self.open_lock = threading.Lock()
        self.vector_backends: dict[str, VectorBackend | None] = {}
        self.links: Any = None
        self.links_read = False
        self.states: dict[str, Any] = {}  # pool -> its stored stance states, or None
        self.users = 0  # searches running on it
        self.retired = False  # a newer version replaced it: close when the last user leaves

    def close(self) -> None:
        for st in self.stores.values():
            st.close()
        for b in self.backends.values():
            b.close()
        if self.links is not None:
            self.links.close()
        for st in self.states.values():
            if st is not None:
                st.close()
        self.stores.clear()
        self.backends.clear()
        self.vector_backends.clear()
        self.links = None
        self.states.clear()
        self.lease.release()


@dataclass(frozen=True)
class Hybrid:
    hits: HitList
    vector: Any  # the query's dense vector (numpy), None without a dense retriever


class Searcher:
    """Reads the live version of an index. A long-lived searcher moves to the newest version at
    its next search (`pinned`), atomically: a search runs on one version from start to end, and
    the version it holds is not deleted by a writer until it is done."""

    def __init__(self, name: str, home: str | Path | None = None):
        self.name = check_name(name)
        self.dir = IndexDir(resolve_home(home), name)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._view = _View(self.dir.lease())
        self._warming: list[background.Job] = []

    # -- versions ----------------------------------------------------------------------------------
    @contextmanager
    def pinned(self) -> Iterator[_View]:
        """Hold one version for the calls inside (moving to the newest first, if a write was
        published since). Nested calls in the same thread share the outer pin."""
        held = getattr(self._local, "view", None)
        if held is not None:
            yield held
            return
        view = self._acquire()
        self._local.view = view
        try:
            yield view
        finally:
            self._local.view = None
            self._release(view)

    def carried(self, work: Callable[[], T]) -> Callable[[], T]:
        """`work` as it runs on another thread, reading the version this thread has pinned (the
        search it is part of), which stays held until it returns."""
        with self._lock:
            view = self._v
            view.users += 1

        def run() -> T:
            self._local.view = view
            try:
                return work()
            finally:
                self._local.view = None
                self._release(view)

        return run

    def refresh(self) -> bool:
        """Move to the newest published version; True if it changed."""
        with self._lock:
            live = self.dir.current_name()
            if live is None or live == self._view.version.name:
                return False
            old, self._view = self._view, _View(self.dir.lease())
            old.retired = True
            if old.users == 0:
                old.close()
            return True

    def _acquire(self) -> _View:
        self.refresh()
        with self._lock:
            self._view.users += 1
            return self._view

    def _release(self, view: _View) -> None:
        with self._lock:
            view.users -= 1
            if view.retired and view.users == 0:
                view.close()

    @property
    def _v(self) -> _View:
        """The version this thread is pinned to, else the newest one this searcher opened."""
        return getattr(self._local, "view", None) or self._view

    @property
    def version(self) -> Path:
        return self._v.version

    @property
    def manifest(self) -> dict[str, Any]:
        return self._v.manifest

    @property
    def config(self) -> IndexConfig:
        return self._v.config

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
        v = self._v
        if pool not in v.stores:
            integrity.check(v.version, v.manifest, f"{pool}/{ItemStore.FILENAME}")
            v.stores[pool] = ItemStore(v.version / pool, readonly=True)
        return v.stores[pool]

    def vector_backend(self, pool: str) -> VectorBackend | None:
        """The pool's backend that stores item vectors (`VectorBackend`), or None. Looked up once
        per pool: the engine asks at every stage of every search."""
        v = self._v
        if pool not in v.vector_backends:
            found = (self.backend(pool, k) for k in self.config.for_pool(pool))
            v.vector_backends[pool] = next((b for b in found if isinstance(b, VectorBackend)), None)
        return v.vector_backends[pool]

    def backend(self, pool: str, kind: str) -> Backend:
        self._check_pool(pool)
        if kind in self.retrievers and kind not in self.config.for_pool(pool):
            raise NotInIndex(
                f"index {self.name!r} has no {kind} retriever over its {pool}",
                hint=f"available there: {', '.join(self.config.for_pool(pool))}; add it: "
                f"perspect index rebuild --name {self.name} --retriever {kind}",
            )
        if kind not in self.retrievers:
            if kind == HYBRID:
                raise NotInIndex(
                    f"index {self.name!r} has only {self.retrievers[0]}; hybrid needs two retrievers",
                    hint="rebuild with --retrievers bm25,colbert",
                )
            raise NotInIndex(
                f"index {self.name!r} has no {kind} retriever",
                hint=f"available: {', '.join(self.retrievers)}",
            )
        key = (pool, kind)
        v = self._v
        with v.open_lock:  # one object per backend, whichever thread opens it first (warm-up)
            if key not in v.backends:
                integrity.check(v.version, v.manifest, f"{pool}/{kind}")
                opts = v.config.backends.get(kind, {})
                v.backends[key] = backend_class(kind, opts).open(v.version / pool / kind, opts)
        return v.backends[key]

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
        with self.pinned():
            kind = retriever or self.default_retriever
            t0 = time.perf_counter()
            if kind == HYBRID and len(self.retrievers) > 1:
                return self.hybrid(query, pool, int(k), fusion_depth, rrf_k).hits
            scored = self.first_stage(query, pool, kind, int(k))
            return self.hits(query, pool, kind, scored, t0)

    def first_stage(self, query: str, pool: str, kind: str, k: int) -> list[tuple[str, float]]:
        """One retriever's top-k of `pool` (`runs`: all of them at once): the pinned version's
        backend here, the shards' answers merged over a cluster (retriever.shards)."""
        return self.backend(pool, kind).search(query, k)

    def hybrid(self, query: str, pool: str, k: int, depth: int, rrf_k: int) -> Hybrid:
        """Every retriever's top `max(k, depth)`, fused by RRF into the top `k` (a single
        retriever too: the engine's relevance stack reads the fused score), and the query's dense
        vector from the same pass."""
        t0 = time.perf_counter()
        runs, vector = self.runs(query, pool, max(k, depth))
        scored = rrf(runs, k=rrf_k, limit=k)
        return Hybrid(self.hits(query, pool, self.default_retriever, scored, t0), vector)

    def warm_in_background(self, pools: Sequence[str] = ("perspectives",)) -> background.Job:
        """Open the backends of `pools` on a thread (`Backend.warm`: for ColBERT, importing torch
        and loading PLAID), so that it overlaps what the caller loads meanwhile (the models):
        the first search of a process comes sooner. Errors are left to that search to raise.
        The warm-up is a user of its version (closing the searcher closes the backends when it
        has left, never under it) and a `perspect.core.background` job: `close` cancels it, and
        it stops before its next backend."""
        with self._lock:
            view = self._v  # the caller's pinned version, else the newest
            view.users += 1

        def work(cancel: threading.Event) -> None:
            self._local.view = view
            try:
                for pool in pools:
                    if pool not in view.manifest["pools"]:
                        continue
                    for kind in view.config.for_pool(pool):
                        if cancel.is_set():
                            return
                        # an error is the search's to raise: it reopens the backend
                        with suppress(Exception):
                            self.backend(pool, kind).warm()
            finally:
                self._local.view = None
                self._release(view)

        job = background.start("perspect-warm", work)
        self._warming = [j for j in self._warming if j.running] + [job]
        return job

    def runs(self, query: str, pool: str, depth: int) -> tuple[list[list[tuple[str, float]]], Any]:
        """Each backend's top `depth` for `query`, run concurrently, and the query's dense vector
        (None without a dense retriever), which the engine reuses for its cosine features."""
        kinds = self.config.for_pool(pool)
        backends = {kind: self.backend(pool, kind) for kind in kinds}
        vector: list[Any] = [None]  # the calls run on other threads: they get backends, not pins

        def dense() -> list[tuple[str, float]]:
            vector[0] = backends["dense"].embed_queries([query])[0]
            return backends["dense"].search_vectors(vector[0][None, :], depth)[0]

        calls = {
            kind: dense if kind == "dense" else (lambda b=b: b.search(query, depth))
            for kind, b in backends.items()
        }
        order = [b.kind for b in _slowest_first(list(backends.values()))]
        got = dict(zip(order, concurrently([calls[k] for k in order]), strict=True))
        return [got[k] for k in kinds], vector[0]

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
        from perspect.core.index.links import Links

        v = self._v
        if not v.links_read:
            if Links.exists(v.version):
                integrity.check(v.version, v.manifest, "links.sqlite")
            v.links = Links(v.version) if Links.exists(v.version) else None
            v.links_read = True
        return v.links

    def stance_states(self, pool: str = "perspectives"):
        """The stored lower-layer states of the stance trunk of `pool`'s items (the perspectives,
        the documents' sentences: perspect.core.index.stance_states), or None (an index built
        without them)."""
        from perspect.core.index.stance_states import STATES, States

        v = self._v
        if pool not in v.states:
            folder = v.version / pool
            if States.exists(folder):
                integrity.check(v.version, v.manifest, f"{pool}/{STATES}")
            v.states[pool] = States(folder) if States.exists(folder) else None
        return v.states[pool]

    def context(self, pool: str, sentence_id: str) -> SourceContext:
        """A sentence of an article pool (news, documents) in its article: every sentence of
        that article, in order, and which one it is."""
        if pool not in ARTICLE_POOLS:
            raise PerspectError(f"{pool} holds no articles", hint="news or documents")
        with self.pinned():
            store = self.store(pool)
            item = store.get(sentence_id)
            if item is None:
                raise NotInIndex(
                    f"index {self.name!r} has no {pool} sentence {sentence_id!r}",
                    hint="the ids are in the search's --json (a member's source)",
                )
            source = Provenance.of(pool, item.id, item.metadata)
            sentences = store.article(source.article_id) or [item]
            ids = [it.id for it in sentences]
            return SourceContext(
                pool, item.id, ids.index(item.id), tuple(it.text for it in sentences), source
            )

    def _check_pool(self, pool: str) -> None:
        if pool not in POOLS:
            raise PerspectError(f"unknown pool {pool!r}", hint=f"one of {', '.join(POOLS)}")
        if pool not in self.manifest["pools"]:
            raise NotInIndex(
                f"index {self.name!r} has no {pool} pool",
                hint=f"add one: perspect index add --name {self.name} --{pool} FILE",
            )

    def close(self) -> None:
        """Close the version now, or, while a search or the warm-up still reads it, when the
        last of them leaves; the warm-up is asked to stop at its next backend."""
        for job in self._warming:
            job.cancel.set()
        with self._lock:
            self._view.retired = True
            if self._view.users == 0:
                self._view.close()


def _slowest_first(backends: list[Backend]) -> list[Backend]:
    """The caller's thread takes the first call: give it the slowest retriever so the cheap ones
    finish on the pool meanwhile (ColBERT ~18 ms, dense ~9, BM25 <1 on the perspective pool)."""
    rank = {"colbert": 0, "dense": 1}
    return sorted(backends, key=lambda b: rank.get(b.kind, 2))
