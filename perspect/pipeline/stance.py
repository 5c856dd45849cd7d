"""A cluster's side: the mean P(support) of its members against the fitted side cut.

Its own stage because the side is a decision a reader acts on; what the engine shows as the
strength is the distance of that mean from the side it falls on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspect.core.result import Member


def side(members: Sequence[Member], cut: float) -> tuple[str, float]:
    """(stance, strength) of a group of members: "support" when their mean P(support) clears
    `cut`, and how strongly (P(support) or 1 - P(support))."""
    mean = float(np.mean([m.support for m in members]))
    stance = "support" if mean >= cut else "oppose"
    return stance, (mean if stance == "support" else 1 - mean)
