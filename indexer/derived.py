"""What an index derives from its pools at write time, beyond each retriever's own files: the
perspective -> evidence links with their cited sentences (indexer.links; the trunk's lower-layer
states are indexer.states'). Out of indexer.indexer, whose write protocol calls it, so that each
stays a module of one purpose.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perspect.core.index.config import IndexConfig
from perspect.core.index.store import ItemStore
from perspect.core.progress import Reporter
from perspect.indexer.links import KEEP, Links, compute, with_sentences
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
    cfg = IndexConfig.from_json(manifest["config"])
    # those the evidence pool has in this version (a first, searchable one: BM25 alone,
    # indexer.pending)
    kinds = set(cfg.for_pool("evidence")) & {"bm25", "dense"}
    if not kinds:
        return
    t0 = time.perf_counter()
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
