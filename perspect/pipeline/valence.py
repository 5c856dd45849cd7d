"""A claim's second reading: the thing it acts on, and whether acting on it means that thing is
good or bad ("Zoos should be closed" -> "Zoos are good", read the other way round).

Why: a perspective is often written for a neighbouring claim. "Zoos save species from
extinction" argues about zoos, not about closing them, and the stance model, trained on
perspectives written for their own claim, reads such an argument against "Zoos should be closed"
at chance (AUROC .41 on the hand-written sources of `bench/sources/`). Against "Zoos are good"
it reads it well, and a claim that bans, closes or abolishes a thing takes the other side of
that thing's merits. The stance of a candidate is the mean of both readings (the weight fitted
on held-out train claims: `perspect.lab.fitting.fit_valence`), as stance classification of
context-dependent claims does it (Bar-Haim et al., 2017: a claim's sentiment towards its target,
times the target's relation to the topic's). Measured in `bench/RESULTS.md`.

A rule over the debate motions PERSPECTRUM and readers write ("X should be banned", "Ban X",
"We must not allow X"): a claim it does not recognise has no second reading.
"""

from __future__ import annotations

import re

from perspect.core.result import SecondReading

# what a claim can call for: against the thing (its merits argue against the claim) ...
AGAINST = (
    "banned|prohibited|outlawed|abolished|closed|closed down|scrapped|ended|restricted|regulated|"
    "taxed|paused|criminali[sz]ed|censored|limited|phased out|stopped|eliminated|removed|illegal|"
    "made illegal|denied|shut down|curbed|discouraged|boycotted|halted|suspended"
)
# ... or for it (its merits argue for the claim)
FOR = (
    "allowed|legal|made legal|legali[sz]ed|permitted|funded|subsidi[sz]ed|encouraged|promoted|"
    "protected|expanded|supported|adopted|embraced|preserved|kept|continued"
)
# the same as imperatives ("Ban X", "We should ban X")
ACT_AGAINST = (
    "ban|prohibit|outlaw|abolish|close|scrap|end|restrict|regulate|tax|pause|criminali[sz]e|"
    "censor|limit|stop|eliminate|remove|boycott|halt|suspend"
)
ACT_FOR = (
    "allow|legali[sz]e|permit|fund|subsidi[sz]e|encourage|promote|protect|expand|support|adopt"
)
MODAL = r"should|must|ought to|needs? to|has to|have to"
ADVERB = r"(?:(?:completely|totally|fully|immediately|further|also|now|simply|finally)\s+)?"
AGENT = r"(?:we|governments?|the government|states?|countries|schools|society|people|the state)"
MAX_TARGET_WORDS = 8


def of(claim: str) -> SecondReading | None:
    """The claim's second reading, or None where the rule does not recognise the claim."""
    text = claim.strip().rstrip(".!")
    m = re.match(
        rf"(?i)^(?P<t>.+?)\s+(?:{MODAL})\s+(?P<not>not\s+)?{ADVERB}be\s+{ADVERB}"
        rf"(?P<v>{AGAINST}|{FOR})\b(?P<rest>.*)$",
        text,
    )
    if m:
        target, against = m.group("t"), _is(AGAINST, m.group("v"))
        place = re.match(r"(?i)\s+((?:in|at) [\w' -]+)$", m.group("rest"))
        if place:  # "banned in schools": the thing where the claim acts on it
            target = f"{target} {place.group(1)}"
    else:
        m = re.match(
            rf"(?i)^(?:{AGENT}\s+(?:{MODAL})\s+(?P<not>not\s+)?)?{ADVERB}"
            rf"(?P<v>{ACT_AGAINST}|{ACT_FOR})\s+(?P<t>.+)$",
            text,
        )
        if not m:
            return None
        against = _is(ACT_AGAINST, m.group("v"))
        thing, *where = re.split(r"(?i)\s+(?:in|from|at)\s+", m.group("t"), maxsplit=1)
        target = f"{thing} in {where[0]}" if where else thing
    if m.group("not"):
        against = not against
    target = target.strip()
    if not target or len(target.split()) > MAX_TARGET_WORDS:
        return None
    if re.fullmatch(r"(?i)there|it|this|that|they|everyone|all|people", target):
        return None
    target = target[:1].upper() + target[1:]
    return SecondReading(f"{target} {_be(target)} good", -1 if against else 1)


def _is(words: str, word: str) -> bool:
    return re.fullmatch(words, re.sub(r"\s+", " ", word.lower())) is not None


def _be(target: str) -> str:
    """ "is" or "are" for the target: plural when its head noun (the last word before a
    preposition) ends in a plain s, or it joins two things."""
    head = re.split(r"(?i)\s+(?:in|at|of|by|for|on|from|with)\s+", target)[0].split()
    if " and " in target.lower():
        return "are"
    if head[0].lower().endswith("ing") and len(head) > 1:  # "Taking food ...": a gerund
        return "is"
    last = head[-1].lower()
    return "are" if last.endswith("s") and not last.endswith(("ss", "us", "is")) else "is"
