"""What an index derives from its pools at write time, beyond each retriever's own files: the
perspective -> evidence links with their cited sentences (indexer.links) and the stance trunk's
lower-layer states of the perspectives (perspect.core.index.stance_states). Out of
indexer.indexer, whose write protocol calls them, so that each stays a module of one purpose.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perspect.core.index.config import IndexConfig
from perspect.core.index.stance_states import States, quantize
from perspect.core.index.store import ItemStore
from perspect.core.progress import Reporter
from perspect.core.types import Item
from perspect.indexer.links import KEEP, Links, compute, with_sentences
from perspect.reranker import factory, stance_trunk
from perspect.retriever.registry import backend_class


def link(
    version: Path, manifest: dict[str, Any], reporter: Reporter, pids: list[str] | None = None
) -> None:
    """Precompute perspective -> evidence links (see `indexer.links`) for `pids`, or for every
    perspective when `pids` is None."""
    if not {"perspectives", "evidence"} <= set(manifest["pools"]):
        return
    if not IndexConfig.from_json(manifest["config"]).links:
        return
    kinds = set(manifest["config"]["retrievers"]) & {"bm25", "dense"}
    if not kinds:
        return
    t0 = time.perf_counter()
    cfg = IndexConfig.from_json(manifest["config"])
    store = ItemStore(version / "perspectives", readonly=True)
    if pids is None:
        items = [(it.id, it.text) for it in store]
    else:
        got = store.get_many(pids)
        items = [(p, got[p].text) for p in pids if p in got]
    store.close()
    ev = {
        k: backend_class(k, cfg.backends.get(k, {})).open(
            version / "evidence" / k, cfg.backends.get(k, {})
        )
        for k in sorted(kinds)
    }
    vecs = None
    if "dense" in ev:
        pd = backend_class("dense", cfg.backends.get("dense", {})).open(
            version / "perspectives" / "dense", cfg.backends.get("dense", {})
        )
        vecs = pd.vectors([p for p, _ in items])
        pd.close()
    links = Links(version, readonly=False)
    if pids is None:
        links.clear()
    with reporter.stage("linking perspectives to evidence", total=len(items)) as adv:
        rows = compute(items, ev, vecs, progress=adv)
    if vecs is not None:
        eids = sorted({x.evidence_id for _, got in rows for x in got})
        evs = ItemStore(version / "evidence", readonly=True)
        texts = {e: it.text for e, it in evs.get_many(eids).items()}
        evs.close()
        with reporter.stage("citing evidence sentences", total=len(eids)) as adv:
            rows = with_sentences(rows, vecs, texts, ev["dense"].embed_queries, progress=adv)
    links.replace(rows)
    manifest["links"] = {
        "perspectives": links.count(),
        "keep": KEEP,
        "retrievers": sorted(kinds),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    links.close()
    for b in ev.values():
        b.close()


def store_states(
    version: Path, manifest: dict[str, Any], reporter: Reporter, items: list[Item] | None
) -> None:
    """Store the stance trunk's lower-layer states of `items` (None: of every perspective):
    a search then runs only the claim's lower layers and the top ones per candidate."""
    if not IndexConfig.from_json(manifest["config"]).stance_states:
        return
    if stance_trunk.bundled() is None:
        return
    t0 = time.perf_counter()
    with reporter.stage("loading the stance trunk"):
        trunk = factory.load(["trunk"], factory.TORCH).trunk  # the bundle's, on PyTorch
    store = ItemStore(version / "perspectives", readonly=True)
    todo = [(it.id, it.text) for it in (store if items is None else items)]
    store.close()
    states = States(version / "perspectives", readonly=False)
    states.set_key(trunk.states_key)
    if items is None:
        states.drop([p for (p,) in states.db.execute("SELECT pid FROM states")])
    step = 256
    with reporter.stage("storing stance states", total=len(todo)) as adv:
        for s in range(0, len(todo), step):
            chunk = todo[s : s + step]
            lower = trunk.lower([t for _, t in chunk])
            states.put((pid, *quantize(h)) for (pid, _), h in zip(chunk, lower, strict=True))
            adv(len(chunk))
    manifest["stance_states"] = {
        "count": states.count(),
        "key": trunk.states_key,
        "seconds": round(time.perf_counter() - t0, 3),
    }
    states.close()
