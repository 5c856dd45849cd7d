"""The stance trunk's lower-layer states of a pool's items, stored at index time.

Why stored: the relation model (perspect.reranker.stance_trunk) reads a pair decomposed, each
text's frozen lower layers alone and only the top layers over both. Storing each item's lower
states when it is indexed leaves a search the claim's lower layers and the top ones per
candidate. Two pools keep them: the perspectives (their side, issue 33) and the reader's
documents, whose sentences a search mines for arguments (perspect.pipeline.mining). The format
is perspect.core.index.stance_states's; the manifest says how many, under which trunk key.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perspect.core.index.config import IndexConfig
from perspect.core.index.kept_states import KeptStates
from perspect.core.index.stance_states import States, quantize
from perspect.core.index.store import ItemStore
from perspect.core.progress import Reporter
from perspect.core.types import STATE_POOLS, Item
from perspect.reranker import factory, stance_trunk

BATCH = 256  # texts per pass of the lower layers (sorted by length inside it)


def manifest_key(pool: str) -> str:
    """Where the manifest describes a pool's states (the perspectives' key predates the rest)."""
    return "stance_states" if pool == "perspectives" else f"stance_states_{pool}"


def store(
    version: Path,
    manifest: dict[str, Any],
    pool: str,
    items: Sequence[Item] | None,
    reporter: Reporter,
    remote=None,
) -> None:
    """Store the trunk's lower-layer states of `items` of `pool` (None: of every item there),
    where the index keeps states and the bundle has a trunk; `remote`: where the lower layers
    run instead (indexer.ray_build), the same states stored."""
    if not IndexConfig.from_json(manifest["config"]).stance_states:
        return
    if stance_trunk.bundled() is None:
        return
    t0 = time.perf_counter()
    with reporter.stage("loading the stance trunk"):
        # the bundle's, on ONNX Runtime where its graphs are made (`perspect models prepare`, a
        # search): 1.3-1.6x PyTorch's pace on these cores (7 vs 5 texts/s under load, 24 vs 15
        # idle), states equal to 5e-6, far under their int8 storage's step; else on PyTorch
        trunk = factory.load(["trunk"], factory.WRITER).trunk
    items_store = ItemStore(version / pool, readonly=True)
    todo = [(it.id, it.text) for it in (items_store if items is None else items)]
    items_store.close()
    states = States(version / pool, readonly=False)
    states.set_key(trunk.states_key)
    if items is None:
        states.drop([p for (p,) in states.db.execute("SELECT pid FROM states")])
    what = "stance" if pool == "perspectives" else f"relation-model states of {pool}"
    with reporter.stage(f"storing {what}", total=len(todo)) as adv:
        if remote is not None:
            got = remote.lower_quantized([t for _, t in todo], adv)
            states.put((pid, *qs) for (pid, _), qs in zip(todo, got, strict=True))
        else:
            for s in range(0, len(todo), BATCH):
                chunk = todo[s : s + BATCH]
                lower = trunk.lower([t for _, t in chunk])
                states.put((pid, *quantize(h)) for (pid, _), h in zip(chunk, lower, strict=True))
                adv(len(chunk))
    manifest[manifest_key(pool)] = {
        "count": states.count(),
        "key": trunk.states_key,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    states.close()


def drop(version: Path, manifest: dict[str, Any], pool: str, ids: Sequence[str]) -> None:
    """Forget the states of deleted items."""
    if pool not in STATE_POOLS or not States.exists(version / pool):
        return
    states = States(version / pool, readonly=False)
    states.drop(ids)
    manifest.setdefault(manifest_key(pool), {})["count"] = states.count()
    states.close()


def current(version: Path, pool: str = "perspectives") -> bool:
    """Whether `version` stores every item of `pool`'s states under the bundled trunk's key."""
    if not States.exists(version / pool) or stance_trunk.bundled() is None:
        return False
    states = States(version / pool)
    items = ItemStore(version / pool, readonly=True)
    try:
        key = factory.load(["trunk"], factory.WRITER).trunk.states_key
        return states.key == key and states.count() == items.count()
    finally:
        states.close()
        items.close()


def texts_of(version: Path) -> list[str]:
    """The distinct texts of `version`'s perspectives ([] without a perspective pool)."""
    if not (version / "perspectives" / ItemStore.FILENAME).is_file():
        return []
    store = ItemStore(version / "perspectives", readonly=True)
    try:
        return list(dict.fromkeys(it.text for it in store))
    finally:
        store.close()


def keep_perspectives(texts: Sequence[str], root: Path, reporter: Reporter) -> int:
    """Keep, beside the versions (perspect.core.index.kept_states), the lower states of those
    perspective `texts` that have none there yet: what a search would compute at first touch,
    done by the last stage of a build's completion (after its swap: the index answers
    meanwhile), so that a claim's first search computes none. Returns how many it computed (0
    where the bundle has no trunk)."""
    if not texts or stance_trunk.bundled() is None:
        return 0
    with reporter.stage("loading the stance trunk"):
        trunk = factory.load(["trunk"], factory.WRITER).trunk
    kept = KeptStates(root)
    todo = kept.missing(trunk.states_key, list(texts))
    with reporter.stage("keeping the perspectives' lower states", total=len(todo)) as adv:
        for s in range(0, len(todo), BATCH):
            chunk = todo[s : s + BATCH]
            rows = [(t, *quantize(h)) for t, h in zip(chunk, trunk.lower(chunk), strict=True)]
            if not kept.put(trunk.states_key, rows):
                return s  # an unwritable folder: first touch pays for the rest
            adv(len(chunk))
    return len(todo)
