"""Sides carried from known debates (issue 72): a perspective written for a debate on a known side
takes its side on a new claim from how that debate relates to the claim, where that is clear and
agrees with its own reading; where the two disagree it is "unclear".

Why: one reading of one perspective is as weak as the model; a debate's labelled arguments and
its thesis vote. "Human rights trump those of lower animals" was written against animal testing:
under "Animals should have lawful rights" its debate relates the other way round, so it argues
against the claim whatever its words share with it.

A debate's relation to the claim, r in [-1, 1]: the direct reading of the claim against the
thesis (2 P(the thesis supports the claim) - 1), averaged with the vote of its arguments among
the kept ones where both its sides are there (mean P(support) of its `support` arguments minus
that of its `oppose` ones). A negated claim flips both, so every carried side flips with it. The
thesis's lower states are kept with the index like any text's (pipeline.lower), so a debate's
reading costs one top pass a search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from perspect.core.result import Member

MARGIN = 0.2  # |r| below this: the debate's relation is not clear; the perspective's own reading
STRONG = 0.8  # the direct reading at least this far from 0 (the thesis says what the claim says,
# or its denial): the carried side wins over the perspective's own reading, as sure as that reading
UNSURE = 0.5  # the support given where the carried side and the own reading disagree
UNSURE_OWN = 0.05  # an own reading this close to .5 is none: a clear debate carries its side


class DebateSides:
    """Carries sides from the debates kept members were written for (their metadata)."""

    def __init__(self, stance, margin: float = MARGIN, strong: float = STRONG):
        """`stance`: the StanceScorer (P(support) of texts for a claim)."""
        self.stance, self.margin, self.strong = stance, margin, strong

    def relations(self, claim: str, members: Sequence[Member]) -> dict[str, float]:
        """debate id -> r, for the debates of `members` (those with a debate and a side)."""
        return {d: r for d, (r, _) in self.readings(claim, members).items()}

    def readings(self, claim: str, members: Sequence[Member]) -> dict[str, tuple[float, float]]:
        """debate id -> (r, the direct reading alone: 2 P(the thesis supports the claim) - 1)."""
        debates: dict[str, list[Member]] = {}
        for m in members:
            if m.metadata.get("debate_id") and m.metadata.get("side") in ("support", "oppose"):
                debates.setdefault(str(m.metadata["debate_id"]), []).append(m)
        if not debates:
            return {}
        ids = list(debates)
        theses = [str(debates[d][0].metadata.get("debate") or "") for d in ids]
        direct = self.stance(claim, theses, [f"debate:{d}" for d in ids])
        out = {}
        for d, p in zip(ids, direct, strict=True):
            r = 2.0 * float(p) - 1.0
            pro = [m.support for m in debates[d] if m.metadata["side"] == "support"]
            con = [m.support for m in debates[d] if m.metadata["side"] == "oppose"]
            if pro and con:
                r = 0.5 * r + 0.5 * (float(np.mean(pro)) - float(np.mean(con)))
            out[d] = (r, 2.0 * float(p) - 1.0)
        return out

    def __call__(self, claim: str, members: Sequence[Member]) -> list[Member]:
        """`members` with each side carried where its debate's relation is clear: kept where it
        agrees with the perspective's own reading or it has none (too close to call), "unclear"
        (P(support) .5) where they disagree, unless the relation is strong (the thesis is the
        claim or its denial): then carried.
        A reader's correction and mined members keep theirs."""
        rel = self.readings(claim, [m for m in members if not m.corrected and not m.mined])
        out = []
        for m in members:
            r, direct = rel.get(str(m.metadata.get("debate_id")), (None, 0.0))
            if r is None or abs(r) < self.margin or m.corrected or m.mined:
                out.append(m)
                continue
            sign = 1.0 if m.metadata["side"] == "support" else -1.0
            carried = r * sign > 0
            own = m.support >= 0.5
            if abs(m.support - 0.5) < UNSURE_OWN:  # no reading of its own (too close to call)
                lean = 0.5 + 0.5 * abs(r)
                out.append(replace(m, support=lean if carried else 1.0 - lean))
            elif carried == own:
                out.append(m)
            elif abs(direct) >= self.strong and direct * r > 0:  # the thesis is the claim (or its
                # denial), read so with confidence: its labels say the side
                lean = 0.5 + 0.5 * abs(direct)  # as sure as the thesis reads as the claim
                out.append(replace(m, support=lean if carried else 1.0 - lean))
            else:
                out.append(replace(m, support=UNSURE))
        return out


def debate_sides_agree(members: Sequence[Member]) -> np.ndarray:
    """(n, n): False where two members were written for one debate on opposite sides (issue 72):
    whatever their words share, they argue opposite things there, so they never merge."""
    keys = [(m.metadata.get("debate_id"), m.metadata.get("side")) for m in members]
    debate = np.array([str(d) if d else "" for d, _ in keys])
    side = np.array([str(s) if s else "" for _, s in keys])
    both = (debate[:, None] == debate[None, :]) & (debate[:, None] != "")
    return ~(both & (side[:, None] != side[None, :]))
