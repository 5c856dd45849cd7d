"""A cluster's side: the mean P(support) of its members against the fitted side cut.

Its own stage because the side is a decision a reader acts on: a mean too close to the cut is
"unclear" (Decisions.stance_unclear) rather than a coin toss shown as a verdict; the strength is
P(of the side the mean leans to).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspect.core.decisions import UNCLEAR, Decisions
from perspect.core.result import Member


def side(members: Sequence[Member], decisions: Decisions) -> tuple[str, float]:
    """(stance, strength) of a group of members from their mean P(support): "support",
    "oppose" or "unclear", and P(of the side it leans to)."""
    return decisions.side(_mean(members))


def leaning(members: Sequence[Member], decisions: Decisions) -> str:
    return decisions.leaning(_mean(members))


def _mean(members: Sequence[Member]) -> float:
    return float(np.mean([m.support for m in members]))


__all__ = ["UNCLEAR", "leaning", "side"]
