"""What a long-lived process (`perspect serve`, the TUI) computes while no search runs, so that a
claim's first search finds it done (issue 62, item 3): the claim-independent work a search would
otherwise pay at first touch.

1. every perspective's lower states (pipeline.lower.fill_perspectives), kept beside the versions;
2. then the argument model's judgment of each perspective's shown links: the cited sentence of
   its first `per_cluster` links (the paragraphs a cluster it represents shows), P(for) /
   P(against) kept with the index (pipeline.arguing's `JUDGMENTS`).

Why the second: with every lower state kept, a first search still spent a median of 471 ms (p95
1.7 s) of its 1.0 s in the evidence stage, running the lower layers on the cited sentences of the
links it shows and judging them. Those judgments do not depend on the claim. Only the judgments
are kept: a sentence's lower states (some 40 tokens, 30 KB in int8) are worth nothing once its
pairs are judged, so the fill keeps them nowhere. Both steps compute only while no search runs in
the process (pipeline.lower.searching), a few texts at a time, so a search waits for at most one
batch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from perspect.pipeline.lower import FILL_BATCH, searching, while_idle

log = logging.getLogger(__name__)

PAIRS_BATCH = FILL_BATCH  # (perspective, sentence) pairs judged a pass: ~0.25 s on two cores
IDS_BATCH = 64  # perspectives whose links are looked up at once


def fill_judgments(
    evidence,
    cancel: threading.Event,
    progress: Callable[[int, int], None] | None = None,
    busy: Callable[[], bool] = searching,
) -> int:
    """Judge and keep the cited sentence of each perspective's first links (`evidence`: the
    engine's pipeline.evidence.Evidence) not judged yet, PAIRS_BATCH at a time while `busy()` is
    false, until `cancel` is set. Returns how many pairs it judged. An index without evidence
    links, or with links that cite no sentence yet (a first, searchable version), has none."""
    arguing, searcher = evidence.arguing, evidence.searcher
    if arguing is None or "evidence" not in searcher.pools or "perspectives" not in searcher.pools:
        return 0
    with searcher.pinned():
        if searcher.links() is None:
            return 0
        pids = [it.id for it in searcher.store("perspectives")]
    done, seen = 0, 0
    for s in range(0, len(pids), IDS_BATCH):
        if cancel.is_set():
            break
        with searcher.pinned():  # the version live now (a write meanwhile: its links)
            links = searcher.links()
            if links is None:
                break
            texts, pairs = _shown_pairs(searcher, links, pids[s : s + IDS_BATCH], evidence)
        todo = [x for x, known in zip(pairs, arguing.known(texts, pairs), strict=True) if not known]
        done += while_idle(
            todo, PAIRS_BATCH, lambda part, _, t=texts: arguing.judge_pairs(t, part, idle=True),
            busy, cancel,
        )  # fmt: skip
        seen = min(len(pids), s + IDS_BATCH)
        if progress is not None:
            progress(seen, len(pids))
    if done:
        log.info("judged %d shown links of %d perspectives of %s", done, seen, searcher.name)
    return done


def _shown_pairs(searcher, links, pids: list[str], evidence):
    """(perspective texts by id, the (perspective id, cited sentence) pairs of their first
    `per_cluster` links whose paragraph is in the index and that cite a sentence)."""
    got = links.get(pids)
    chosen = {p: got.get(p, [])[: evidence.per_cluster] for p in pids}
    eids = sorted({x.evidence_id for c in chosen.values() for x in c})
    items = searcher.store("evidence").get_many(eids)
    named = [p for p, c in chosen.items() if c]
    texts = {p: it.text for p, it in searcher.store("perspectives").get_many(named).items()}
    pairs = [
        (p, items[x.evidence_id].text[x.why[0] : x.why[1]])
        for p, c in chosen.items()
        if p in texts
        for x in c
        if x.why and x.why[1] > x.why[0] and x.evidence_id in items
    ]
    return texts, list(dict.fromkeys(pairs))
