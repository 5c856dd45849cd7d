"""A claim's negation, by rule: the contrast set's rewrite, and the stance model's contrast pairs.

Why a rule and not a model: PERSPECTRUM's claims are short debate motions ("X should be banned",
"X is Y", "Ban X"), where a `not` after the first modal or form of "to be", "do not" before an
imperative, or "It is not true that ..." gives a grammatical negation; checked by hand on the dev
claims (tests/test_contrast.py).
"""

from __future__ import annotations

import re

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
    m = re.match(r"(?i)it is not true that\s+", text)
    if m:  # the rule's own negation, undone
        rest = text[m.end() :]
        return rest[:1].upper() + rest[1:]
    m = re.search(r"\b(has to|have to)\b", text, re.I)
    if m:
        aux = "does not have to" if m.group(1).lower() == "has to" else "do not have to"
        return text[: m.start()] + aux + text[m.end() :]
    m = re.search(rf"\b({MODALS}|{BE})\b", text, re.I)
    if m and not re.match(r"(?i)it is (not )?true that", text):
        after = re.match(r"\s+not\b", text[m.end() :], re.I)
        if after:  # already negated ("X should not Y"): its negation drops the "not"
            return text[: m.end()] + text[m.end() + after.end() :]
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
