"""The index-time stage that reads each evidence link's cited sentence with the joint reader (the
comparator's inference head, perspect.reranker.comparator): does the sentence entail the
perspective, contradict it, or neither (issue 41)?

Why at index time: the judgment does not depend on the query, and the reader reads both texts in
every layer (the stronger form, 76.8 % on held-out inference pairs against the relation model's
decomposed 64.0), which a search could not afford per link. What reads it: the evidence stack
(perspect.pipeline.evidence.link_features, "entail"), fitted on links judged the same way (`make
models` step "verdict"). Skipped where the bundle's comparator has no inference head: the links
then carry no judgment and the stack reads its fitted mean for it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.index.links import KEEP, Links
from perspect.core.index.store import ItemStore
from perspect.core.model import bundle
from perspect.reranker.comparator import Comparator

STEP = 512  # pairs per progress tick


def reader() -> Comparator | None:
    """The bundle's joint reader, served (ONNX Runtime) where its graph is exported; None where
    the bundle has no comparator or one without the inference head."""
    folder = paths.comparator_model()
    if not (folder / "manifest.json").is_file():
        return None
    if not Comparator.read(folder)[1].get("nli_labels"):
        return None
    return Comparator.open(folder)


def judge_links(
    version: Path, manifest: dict[str, Any], reporter, pids: list[str] | None = None
) -> None:
    """Judge the cited sentences of `pids`' stored links (all perspectives' with None)."""
    if not Links.exists(version) or "perspectives" not in manifest.get("pools", {}):
        return
    folder = paths.comparator_model()
    if not (folder / "manifest.json").is_file():
        return
    t0 = time.perf_counter()
    links = Links(version, readonly=False)
    try:
        if pids is None:
            pids = [p for (p,) in links.db.execute("SELECT DISTINCT pid FROM links")]
        got = links.get(pids, KEEP)
        persp = ItemStore(version / "perspectives", readonly=True)
        claims = {p: it.text for p, it in persp.get_many(sorted(got)).items()}
        persp.close()
        eids = sorted({x.evidence_id for ls in got.values() for x in ls})
        evs = ItemStore(version / "evidence", readonly=True)
        texts = {e: it.text for e, it in evs.get_many(eids).items()}
        evs.close()
        todo = [
            (pid, x.evidence_id, texts[x.evidence_id][x.why[0] : x.why[1]], claims[pid])
            for pid, ls in got.items()
            if pid in claims
            for x in ls
            if x.why and x.why[1] > x.why[0] and x.evidence_id in texts
        ]
        if not todo:  # no cited sentences (an index without dense vectors)
            return
        with reporter.stage("loading the joint reader"):
            model = reader()
        if model is None:
            return
        rows = []
        with reporter.stage("judging cited sentences", total=len(todo)) as adv:
            for s in range(0, len(todo), STEP):
                chunk = todo[s : s + STEP]
                p = model.inference([(sent, claim) for _, _, sent, claim in chunk])
                rows += [
                    (pid, eid, float(p[k, 0]), float(p[k, 2]))
                    for k, (pid, eid, _, _) in enumerate(chunk)
                ]
                adv(len(chunk))
        links.judge(rows)
    finally:
        links.close()
    manifest.setdefault("links", {})["judged"] = {
        "by": "comparator",
        "model_sha256": bundle.sha256_file(folder / "manifest.json"),
        "links": len(rows),
        "per_perspective": KEEP,
        "seconds": round(time.perf_counter() - t0, 3),
    }
