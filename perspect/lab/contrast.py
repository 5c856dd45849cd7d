"""The stance contrast test: negating a claim must flip the sides of its perspectives.

Why: PERSPECTRUM's T2 cannot tell a model that reads a perspective's attitude to the claim from
one that reads its attitude to the *topic* ("zoos save species" is pro-zoo whether the claim is
"zoos should be banned" or "zoos should stay"); the second scores well on T2 and is wrong for every
claim phrased as a ban, a limit or an abolition. Each dev claim is rewritten into its negation by
rule (`negate`), the gold perspectives keep their text and swap their side, and the flip rate is
the share of perspectives whose predicted side changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perspect.core.datasets.negation import negate
from perspect.core.datasets.perspectrum import Claim
from perspect.reranker.roles import pair_for


def stance_flips(
    model, claims: Sequence[Claim], perspectives: dict[int, str], side_cut: float
) -> dict[str, Any]:
    """For every gold perspective of `claims`: its predicted side for the claim and for the
    claim's negation. flip_rate: the side changed; both_right: each prediction matches the gold
    side (swapped for the negation)."""
    rows = [
        (c.text, negate(c.text), perspectives[p], cl.stance == "SUPPORT")
        for c in claims
        for cl in c.clusters
        for p in cl.pids
        if p in perspectives
    ]
    if not rows:
        return {"claims": 0, "pairs": 0, "flip_rate": float("nan"), "both_right": float("nan")}
    pairs = [pair_for("stance", a, t) for a, _, t, _ in rows]
    pairs += [pair_for("stance", n, t) for _, n, t, _ in rows]
    p = model.predict(pairs, ["stance"])["stance"]
    orig, neg = p[: len(rows)] >= side_cut, p[len(rows) :] >= side_cut
    gold = np.array([g for *_, g in rows])
    return {
        "claims": len({a for a, *_ in rows}),
        "pairs": len(rows),
        "flip_rate": round(100 * float((orig != neg).mean()), 2),
        "both_right": round(100 * float(((orig == gold) & (neg == ~gold)).mean()), 2),
        "mean_shift": round(float(np.abs(p[: len(rows)] - p[len(rows) :]).mean()), 4),
    }
