"""Readers' corrections applied to a search (core.index.corrections): between relevance and
clusters.

A perspective a reader put on a side is kept (even below the relevance cut: the reader says it
bears on the claim) with P(support) 1 or 0; one called off-topic is dropped; two called the same
point are merged by the clusters stage. Corrected members are marked, so a reader sees which
parts of the answer people, not the model, decided.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perspect.core.index.corrections import ClaimCorrections
from perspect.core.result import Member
from perspect.core.types import Hit
from perspect.pipeline.relevance import Judged

SUPPORT = {"support": 1.0, "oppose": 0.0}


def apply(
    members: list[Member], hits: Sequence[Hit], judged: Judged, fixes: ClaimCorrections
) -> list[Member]:
    """`members` (most relevant first) with the corrected sides set, off-topic ones dropped,
    candidates a reader put on a side added back, and the members of a "same" pair marked."""
    if not fixes:
        return members
    have = {m.id for m in members}
    back = [
        Member(h.id, h.text, float(judged.relevance[i]), float(judged.stance[i]), h.metadata)
        for i, h in enumerate(hits)
        if h.id not in have and fixes.sides.get(h.id) in SUPPORT
    ]
    paired = {p for pair in fixes.same for p in pair}
    out = []
    for m in sorted([*members, *back], key=lambda m: -m.relevance):
        side = fixes.sides.get(m.id)
        if side == "off-topic":
            continue
        if side in SUPPORT:
            m = replace(m, support=SUPPORT[side], corrected=True)
        elif m.id in paired:
            m = replace(m, corrected=True)
        out.append(m)
    return out
