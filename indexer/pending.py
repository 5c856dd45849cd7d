"""Searchable early (issue 62): what a build publishes first, and what it leaves for later.

A search reads the perspectives through every retriever (the relevance stack was fitted on their
fused scores, so a missing one changes which perspectives are kept), but reaches evidence through
stored links, news and documents through retrieval, and needs none of their vectors to answer.
So a build first writes every pool's items and BM25 and the perspectives' every retriever, links
perspectives to evidence by BM25, and publishes that version: searchable. The evidence, news and
documents' dense vectors and ColBERT indexes, the links fused with the dense retriever, and their
cited sentences come in the next version (`Indexer.complete`, run by the same build, or by
`perspect index complete` after `index build --pending`). Until then the manifest's `pending`
names the whole configuration and the work left; `perspect index status` prints it.

On `make demo`'s pools that first version costs the perspectives' dense and ColBERT passes
(about 4 of the build's 12 minutes on two cores); the search on it keeps the same perspectives
and sides as on the complete index, its evidence from BM25 links with the cited sentence picked
at query time (pipeline.why).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from perspect.core.index.config import IndexConfig
from perspect.core.types import POOLS

FIRST = ("perspectives",)  # the pools a first version indexes with every retriever
# A news pool of more sentences than this keeps BM25 alone, in every version (issue 73): the
# AllSides set is 1.65 million sentences, some 3 hours of the dense and ColBERT passes on two
# cores for sentences a search reads a few dozen of. The news stage reads its candidates' vectors
# and states at first touch instead (pipeline.news); `perspect index rebuild --retriever dense`
# (or a build on Ray) gives the whole pool its vectors where that is worth it.
LARGE_NEWS = 200_000


def lean(config: IndexConfig, counts: dict[str, int]) -> IndexConfig:
    """`config` without the dense and ColBERT passes over a news pool of more than LARGE_NEWS
    sentences (the reader's documents keep theirs: they are mined, and small)."""
    if counts.get("news", 0) <= LARGE_NEWS:
        return config
    backends = {k: dict(v) for k, v in config.backends.items()}
    for kind in config.retrievers:
        if kind == "bm25":
            continue
        pools = [p for p in POOLS if p in _pools_of(config, kind) and p != "news"]
        backends[kind] = {**backends.get(kind, {}), "pools": pools}
    return replace(config, backends=backends)


def _pools_of(config: IndexConfig, kind: str) -> list[str]:
    return [p for p in POOLS if kind in config.for_pool(p)]


def first_config(full: IndexConfig, pools: list[str]) -> IndexConfig | None:
    """The configuration of the first, searchable version of a build of `pools` under `full`:
    every retriever over the perspectives, BM25 alone over the other pools; None where that is
    the whole build already (nothing would be left for later)."""
    backends = {k: dict(v) for k, v in full.backends.items()}
    for kind in full.retrievers:
        if kind == "bm25":
            continue
        first_pools = [p for p in FIRST if kind in full.for_pool(p)]
        backends[kind] = {**backends.get(kind, {}), "pools": first_pools}
    first = replace(full, backends=backends, stance_states=False)  # states: with the rest
    if all(set(first.for_pool(p)) == set(full.for_pool(p)) for p in pools):
        return None
    return first


def late(full: IndexConfig, first: IndexConfig, pools: list[str]) -> list[str]:
    """ "pool/retriever" of each backend the first version leaves out."""
    return [f"{p}/{k}" for p in pools for k in full.for_pool(p) if k not in first.for_pool(p)]


def entry(full: IndexConfig, first: IndexConfig, pools: list[str]) -> dict[str, Any]:
    """The manifest's `pending`: the configuration the complete version has, and what is left."""
    work = late(full, first, pools)
    if "evidence" in pools and "perspectives" in pools and full.links:
        work.append("links (dense) and their cited sentences")
    return {"config": full.to_json(), "work": work}


PROGRESS = "COMPLETING.json"  # in the index's folder while `complete` runs: what `status` reads


class ProgressFile:
    """A reporter that passes every stage on to `inner` and writes, about once a second, the
    stage running and how far it is into `root/PROGRESS`, so that `perspect index status` in
    another process can say how far the completion is. Removed by `done`."""

    def __init__(self, inner, root: Path):
        self.inner, self.path = inner, Path(root) / PROGRESS
        self._t0 = time.time()
        self._last = 0.0

    def _write(self, stage: str, done: int, total: int | None, force: bool = False) -> None:
        now = time.time()
        if not force and now - self._last < 1.0:
            return
        self._last = now
        row = {"stage": stage, "done": done, "total": total, "pid": os.getpid(),
               "started": self._t0, "at": now}  # fmt: skip
        with contextlib.suppress(OSError):
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(row))
            tmp.replace(self.path)

    @contextlib.contextmanager
    def stage(self, description: str, total: int | None = None):
        count = [0]
        self._write(description, 0, total, force=True)
        with self.inner.stage(description, total) as adv:

            def advance(n: int) -> None:
                count[0] += n
                adv(n)
                self._write(description, count[0], total)

            yield advance

    def done(self) -> None:
        self.path.unlink(missing_ok=True)


def progress(root: Path) -> dict[str, Any] | None:
    """What a `complete` running on the index in `root` last wrote (None: none is running; a
    file left by a process that died is removed)."""
    path = Path(root) / PROGRESS
    try:
        row = json.loads(path.read_text())
        os.kill(int(row["pid"]), 0)
    except ProcessLookupError:
        path.unlink(missing_ok=True)
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return row
