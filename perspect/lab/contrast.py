"""The stance contrast test: negating a claim must flip the sides of its perspectives.

Why: PERSPECTRUM's T2 cannot tell a model that reads a perspective's attitude to the claim from
one that reads its attitude to the *topic* ("zoos save species" is pro-zoo whether the claim is
"zoos should be banned" or "zoos should stay"); the second scores well on T2 and is wrong for every
claim phrased as a ban, a limit or an abolition. Each dev claim is rewritten into its negation by
rule (`negate`), the gold perspectives keep their text and swap their side, and the flip rate is
the share of perspectives whose predicted side changes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from perspect.core.perspectrum import Claim
from perspect.reranker.roles import pair_for

MODALS = r"should|must|can|could|will|would|may|might|ought to"
BE = r"is|are|was|were"


def _not(word: str) -> str:
    """'not' in the case of the word before it ("Should" -> "Not", "SHOULD" -> "NOT")."""
    if word.isupper() and len(word) > 1:
        return "NOT"
    return "Not" if word[:1].isupper() and word[1:2].islower() and word.istitle() else "not"


def negate(claim: str) -> str:
    """The claim's negation, by rule: a `not` after its first modal or form of "to be"; "do not"
    before a leading imperative or for "has to"; else "It is not true that ...". Written for the
    short debate claims of PERSPECTRUM, and checked on them by hand (tests/test_contrast.py)."""
    text = claim.strip().rstrip(".")
    m = re.search(r"\b(has to|have to)\b", text, re.I)
    if m:
        aux = "does not have to" if m.group(1).lower() == "has to" else "do not have to"
        return text[: m.start()] + aux + text[m.end() :]
    m = re.search(rf"\b({MODALS}|{BE})\b", text, re.I)
    if m and not re.match(r"(?i)it is (not )?true that", text):
        if m.group(1).lower() == "can":
            return text[: m.start()] + m.group(1) + _not(m.group(1)).lower() + text[m.end() :]
        return text[: m.end()] + " " + _not(m.group(1)) + text[m.end() :]
    first = text.split(" ", 1)[0]
    if first.lower() in IMPERATIVES:
        return "Do not " + first.lower() + text[len(first) :]
    return "It is not true that " + text[:1].lower() + text[1:]


# verbs PERSPECTRUM claims open with when they are imperatives ("Ban junk food from schools")
IMPERATIVES = {
    "abolish", "adopt", "allow", "ban", "boycott", "build", "cap", "censor", "close", "criminalise",
    "criminalize", "end", "expand", "extend", "fund", "give", "grant", "impose", "increase",
    "introduce", "invest", "keep", "legalise", "legalize", "let", "limit", "lower", "make",
    "nationalise", "open", "outlaw", "pay", "permit", "privatise", "privatize", "prohibit",
    "provide", "raise", "reduce", "regulate", "remove", "replace", "require", "restrict", "scrap",
    "stop", "store", "subsidise", "subsidize", "tax", "teach", "use",
}  # fmt: skip


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
