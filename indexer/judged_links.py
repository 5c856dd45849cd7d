"""The index-time stage that reads each link's cited sentence with the relation model: what makes
a paragraph "supports" / "contradicts" its perspective and a sentence its cited reason (issue 41).

Over the perspectives' stored lower states (perspect.core.index.stance_states), decomposed, as
`with_relations` in perspect.indexer.links scores them; the result is stored with the links
(perspect.core.index.links). Skipped where the bundle has no relation model (a trunk without an
inference head), or one without fitted evidence cuts (the shipped one: measured below the verdict
stack on PERSPECTRUM's links, bench/STUDIES.md), or the index no states: the engine then keeps
the verdict stack and the cosine's cited sentence.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perspect.core.index.links import JUDGED, Links
from perspect.core.index.stance_states import States, dequantize
from perspect.core.index.store import ItemStore
from perspect.indexer.links import with_relations
from perspect.reranker import factory, stance_trunk


def judge_links(
    version: Path, manifest: dict[str, Any], reporter, pids: list[str] | None = None
) -> None:
    """Judge the cited sentences of `pids`' first JUDGED links (all perspectives with None)."""
    if not Links.exists(version) or not States.exists(version / "perspectives"):
        return
    folder = stance_trunk.bundled()
    man = stance_trunk.read(folder) if folder is not None else {}
    if "nli" not in (man.get("heads") or {}) or "evidence" not in (man.get("decisions") or {}):
        return  # no relation model, or none whose evidence cuts the engine reads
    t0 = time.perf_counter()
    links = Links(version, readonly=False)
    try:
        if pids is None:
            pids = [p for (p,) in links.db.execute("SELECT DISTINCT pid FROM links")]
        got = links.get(pids)
        states = States(version / "perspectives")
        try:
            if states.key is None:
                return
            persp = {p: dequantize(q, sc) for p, (q, sc) in states.get_many(pids).items()}
        finally:
            states.close()
        eids = sorted({x.evidence_id for ls in got.values() for x in ls[:JUDGED]})
        evs = ItemStore(version / "evidence", readonly=True)
        texts = {e: it.text for e, it in evs.get_many(eids).items()}
        evs.close()
        with reporter.stage("loading the relation model"):
            trunk = factory.load(
                ["trunk"], factory.WRITER
            ).trunk  # on ONNX Runtime, as a search serves it
        n = len({texts[x.evidence_id][x.why[0] : x.why[1]] for ls in got.values()
                 for x in ls[:JUDGED] if x.why and x.evidence_id in texts})  # fmt: skip
        with reporter.stage("judging cited sentences", total=n) as adv:
            rows = with_relations(got, persp, texts, trunk, progress=adv)
        links.judge(rows)
    finally:
        links.close()
    manifest.setdefault("links", {})["judged"] = {
        "links": len(rows),
        "per_perspective": JUDGED,
        "seconds": round(time.perf_counter() - t0, 3),
    }
