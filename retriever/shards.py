"""An index's pools split into shards by item, each shard searched on its own and the answers
merged: what `perspect serve --ray` runs, one Ray Serve deployment a shard (perspect.api.cluster).

A shard is a view of the index version every node reads (a shared filesystem on a real cluster):
item `x` of a pool belongs to shard `crc32(x) mod n`. Each shard holds its own part of each
retriever and scores it as the whole index would, so that merging the shards' top-k by score gives
the unsharded top-k, and the fusion above it (RRF over the retrievers, `Searcher.hybrid`) is the
same code on the same runs:
- dense: the shard's rows of the stored vectors, an exact inner product (a flat index's scores);
- BM25: the index's tantivy postings, the shard's items kept from its ranking (about n times the
  depth asked, more while too few are the shard's), so its scores carry the whole pool's
  statistics (what Elasticsearch's dfs_query_then_fetch gives); a filter query of the shard's ids
  was measured too: 6.5 ms a query over 11,000 perspectives, against 1 ms for this;
- ColBERT: PLAID's candidates cut to the shard's documents before any is decompressed and scored
  (its costly part is split), or, in a small pool's exact mode, MaxSim over the shard's documents.
A shard runs its retrievers at once, as an unsharded search does; one shard of one is the whole
index, unfiltered. The query is encoded once, where the search runs (`encode_query`), and sent to
every shard.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core import background
from perspect.core.errors import PerspectError
from perspect.retriever.searcher import Searcher, concurrently

SHARDABLE = ("bm25", "dense", "colbert")


def shard_of(item_id: str, n: int) -> int:
    """The shard of an item among `n`: stable across processes and machines."""
    return zlib.crc32(item_id.encode("utf-8")) % n


@dataclass(frozen=True)
class Query:
    """A query as every shard needs it: its text (BM25), its dense vector and its ColBERT token
    vectors (None where the pool has no such retriever)."""

    text: str
    dense: np.ndarray | None = None
    colbert: Any = None


def encode_query(searcher: Searcher, pool: str, texts: Sequence[str]) -> list[Query]:
    """`texts` encoded by `pool`'s query encoders (on the version the caller has pinned)."""
    kinds = searcher.config.for_pool(pool)
    dense = colbert = [None] * len(texts)
    if "dense" in kinds:
        dense = list(searcher.backend(pool, "dense").embed_queries(list(texts)))
    if "colbert" in kinds:
        colbert = list(searcher.backend(pool, "colbert").encode(list(texts), is_query=True))
    return [Query(t, d, c) for t, d, c in zip(texts, dense, colbert, strict=True)]


def merge(runs: Sequence[Sequence[tuple[str, float]]], k: int) -> list[tuple[str, float]]:
    """The shards' runs of one retriever as one: the top-k by score (ties by id: any order of
    arrival merges alike)."""
    return sorted((h for run in runs for h in run), key=lambda h: (-h[1], h[0]))[:k]


class _Part:
    """One pool's part of a shard in one version: its items, their dense rows, the filters."""

    def __init__(self, searcher: Searcher, pool: str, index: int, n: int):
        self.ids = [x for x in searcher.store(pool).ids() if shard_of(x, n) == index]
        kinds = searcher.config.for_pool(pool)
        unknown = [k for k in kinds if k not in SHARDABLE]
        if unknown:
            raise PerspectError(
                f"the {', '.join(unknown)} retriever cannot be split into shards",
                hint="serve this index without --ray, or rebuild it: "
                "--retrievers bm25,dense,colbert",
            )
        self.n, self.members = n, frozenset(self.ids)
        self.rows = None
        if "dense" in kinds and self.ids:
            self.rows = np.asarray(searcher.backend(pool, "dense").vectors(self.ids), np.float32)
        self.colbert = None  # the whole index's documents: no filter
        if "colbert" in kinds and n > 1:
            self.colbert = searcher.backend(pool, "colbert").within(self.ids)

    def bm25(self, backend, text: str, k: int) -> list[tuple[str, float]]:
        """The shard's top-k in the whole pool's BM25 ranking."""
        if self.n == 1:
            return backend.search(text, k)
        fetch = max(k * self.n + 16, 32)
        while True:
            got = backend.search(text, fetch)
            mine = [h for h in got if h[0] in self.members]
            if len(mine) >= k or len(got) < fetch:
                return mine[:k]
            fetch *= 4

    def dense(self, q: np.ndarray, k: int) -> list[tuple[str, float]]:
        if self.rows is None or not len(self.rows):
            return []
        scores = self.rows @ np.asarray(q, np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(self.ids[i], float(scores[i])) for i in top]


class Shard:
    """Shard `index` of `n` of one index: each pool's top-`depth` of each retriever, over its
    own items (`_Part`, opened once per version)."""

    def __init__(self, name: str, home: str | Path | None, index: int, n: int):
        if not 0 <= index < n:
            raise PerspectError(f"shard {index} of {n} does not exist")
        self.index, self.n = index, n
        self.searcher = Searcher(name, home)
        self._parts: dict[tuple[str, str], _Part] = {}

    def count(self, pool: str) -> int:
        with self.searcher.pinned() as v:
            return len(self._part(v.version.name, pool).ids) if pool in self.searcher.pools else 0

    def _part(self, version: str, pool: str) -> _Part:
        key = (version, pool)
        if key not in self._parts:
            self._parts = {k: p for k, p in self._parts.items() if k[0] == version}
            self._parts[key] = _Part(self.searcher, pool, self.index, self.n)
        return self._parts[key]

    def search(
        self, pool: str, query: Query, depth: int, kinds: Sequence[str] | None = None
    ) -> tuple[str, dict[str, list[tuple[str, float]]]]:
        """(the version read, {retriever: its top-`depth` here}) for `kinds` (default: all of
        the pool's)."""
        with self.searcher.pinned() as v:
            part = self._part(v.version.name, pool)
            kinds = list(kinds or v.config.for_pool(pool))
            backends = {k: self.searcher.backend(pool, k) for k in kinds}
            calls = {
                "dense": lambda: part.dense(query.dense, depth),
                "bm25": lambda: part.bm25(backends["bm25"], query.text, depth),
                "colbert": lambda: backends["colbert"].search_encoded(
                    query.colbert, depth, part.colbert
                ),
            }
            order = sorted(kinds, key=lambda k: k != "colbert")  # the slowest in this thread
            got = concurrently([self.searcher.carried(calls[k]) for k in order])
            return v.version.name, dict(zip(order, got, strict=True))

    def close(self) -> None:
        self._parts.clear()
        self.searcher.close()


Ask = Callable[[str, Query, int, Sequence[str] | None], list[dict[str, list[tuple[str, float]]]]]
Encode = Callable[[str, str], Query]


class ShardedSearcher(Searcher):
    """A Searcher whose first stage runs on shards: `ask(pool, query, depth, kinds)` gives every
    shard's runs (in parallel, on a cluster), merged here by score per retriever; the fusion,
    the hits and everything else (stores, stored vectors, links) read the index as before.
    `encode(pool, text)`: the query's encodings (default: here, by the pool's backends)."""

    def __init__(self, name: str, home: str | Path | None, ask: Ask, encode: Encode | None = None):
        super().__init__(name, home)
        self._ask = ask
        self._encode = encode or (lambda pool, text: encode_query(self, pool, [text])[0])

    def warm_in_background(self, pools: Sequence[str] = ("perspectives",)) -> background.Job:
        """Nothing opened ahead: the first stage's indexes are the shards' (warming them here too
        would hold every pool's PLAID index twice on a node); the query encoders and the stored
        vectors open at the first search, which a cluster's replica runs before it is ready."""
        return background.start("perspect-warm", lambda cancel: None)

    def runs(self, query: str, pool: str, depth: int) -> tuple[list[list[tuple[str, float]]], Any]:
        self._check_pool(pool)  # here, as unsharded: not on a shard
        kinds = self.config.for_pool(pool)
        q = self._encode(pool, query)
        got = self._ask(pool, q, depth, None)
        return [merge([g.get(k, []) for g in got], depth) for k in kinds], q.dense

    def first_stage(self, query: str, pool: str, kind: str, k: int) -> list[tuple[str, float]]:
        self.backend(pool, kind)  # an unknown retriever is refused here, as unsharded
        q = self._encode(pool, query)
        return merge([g.get(kind, []) for g in self._ask(pool, q, k, [kind])], k)
