"""Antonyms and negations two aligned sentences state: the lexical half of `compare`'s judgment,
beside the figures (perspect.pipeline.quantities).

Why a word list and not the model alone: the joint reader learned from Breaking NLI that one
swapped antonym contradicts ("open" -> "closed") and from every corpus that an added "not"
contradicts; nothing taught it that both at once say the same thing. It reads "The council
rejected the plan" against "The council did not approve the plan" as a dispute, and 12 of the 18
agreements of bench/sentence_pairs.json's first two sets so. Retraining it on such rows cost the
disputes the issue's own bench counts (bench/STUDIES.md, "Three follow-ups to the joint reader");
a rule that fires only on a listed pair of opposites leaves every other pair to the model.

Two kinds of opposites:
- complements, where "not X" means "Y" (passed / failed, guilty / innocent, open / closed): with
  one of the two sentences negated they say the same thing (an agreement); with neither or both
  negated, a dispute;
- contraries, where both cannot hold but "not X" is not "Y" (rose / fell, mild / severe,
  supported / opposed): a dispute with neither or both negated, no reading otherwise.

Left out: two sentences whose quantifiers differ ("Only a third passed" / "Two thirds failed"
say the same thing), and words with senses that are not opposites ("lost loved ones", "the ban
was lifted"). The caller decides that the two sentences report the same fact (aligned, similar).
"""

from __future__ import annotations

import re

# (one, other): "not one" means "other"
COMPLEMENTS = [
    ("open", "close"), ("alive", "dead"), ("present", "absent"), ("attend", "absent"),
    ("legal", "illegal"), ("true", "false"), ("guilty", "innocent"), ("safe", "unsafe"),
    ("available", "unavailable"), ("allow", "forbid"), ("pass", "fail"), ("accept", "reject"),
    ("approve", "reject"), ("win", "lose"), ("include", "exclude"), ("succeed", "fail"),
    ("remember", "forget"), ("survive", "die"), ("possible", "impossible"),
    ("correct", "incorrect"), ("complete", "incomplete"), ("employed", "unemployed"),
]  # fmt: skip
# (one, other): both cannot hold, and "not one" is not "other"
CONTRARIES = [
    ("support", "oppose"), ("favour", "oppose"), ("rise", "fall"), ("rise", "drop"),
    ("increase", "decrease"), ("increase", "fall"), ("grow", "fall"), ("grow", "shrink"),
    ("grow", "decline"), ("rise", "decline"), ("mild", "severe"), ("rare", "common"),
    ("praise", "criticise"), ("praise", "complain"), ("cheap", "expensive"),
    ("promising", "disappointing"), ("strong", "weak"), ("acquit", "convict"),
    ("innocent", "convict"), ("pass", "reject"), ("success", "failure"), ("gain", "lose"),
    ("profit", "loss"), ("early", "late"), ("improve", "worsen"), ("ahead", "behind"),
]  # fmt: skip

# irregular and derived forms -> the word the lists use; regular inflections are found by rule
FORMS = {
    "won": "win", "winning": "win", "lost": "lose", "losing": "lose", "rose": "rise",
    "risen": "rise", "rising": "rise", "fell": "fall", "fallen": "fall", "falling": "fall",
    "grew": "grow", "grown": "grow", "growing": "grow", "growth": "grow", "shrank": "shrink",
    "shrunk": "shrink", "forgot": "forget", "forgotten": "forget", "forbade": "forbid",
    "forbidden": "forbid", "shut": "close", "closure": "close", "reopen": "open",
    "reopened": "open", "reopens": "open", "opening": "open", "closing": "close",
    "died": "die", "dies": "die", "dying": "die", "acquittal": "acquit", "conviction": "convict",
    "criticize": "criticise", "criticized": "criticise", "criticised": "criticise",
    "favor": "favour", "favoured": "favour", "favored": "favour", "approval": "approve",
    "rejection": "reject", "severely": "severe", "mildly": "mild", "rarely": "rare",
    "absence": "absent", "presence": "present", "successful": "success",
}  # fmt: skip
PHRASES = {"turned down": "rejected", "turn down": "reject", "shut down": "close",
           "in favour of": "supporting", "in favor of": "supporting", "no longer": "not",
           "laid off": "dismissed", "let go": "dismissed", "close to": "near",
           "in common": "shared"}  # fmt: skip
NEGATORS = {"not", "never", "no", "nobody", "nothing", "none", "neither", "nor", "cannot"}
QUANTIFIERS = {"more", "most", "fewer", "less", "few", "many", "some", "all", "every", "several",
               "only", "half", "third", "thirds", "quarter", "majority", "minority"}  # fmt: skip

OPPOSITE: dict[str, dict[str, str]] = {}
for _kind, _pairs in (("complement", COMPLEMENTS), ("contrary", CONTRARIES)):
    for _x, _y in _pairs:
        OPPOSITE.setdefault(_x, {})[_y] = _kind
        OPPOSITE.setdefault(_y, {})[_x] = _kind
_WORD = re.compile(r"[a-z]+")


def _lemma(word: str) -> str:
    if word in FORMS:
        return FORMS[word]
    if word in OPPOSITE:
        return word
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("es", "e"), ("es", ""), ("ed", "e"),
                         ("ed", ""), ("ing", "e"), ("ing", ""), ("s", ""), ("d", "")):  # fmt: skip
        if word.endswith(suffix) and word[: -len(suffix)] + repl in OPPOSITE:
            return word[: -len(suffix)] + repl
    return word


def _words(sentence: str) -> list[str]:
    s = sentence.lower().replace("\u2019", "'").replace("n't", " not")
    for phrase, said in PHRASES.items():
        s = re.sub(rf"\b{phrase}\b", said, s)
    return _WORD.findall(s)


def reading(a: str, b: str) -> str | None:
    """The two sentences' reading from their listed opposites: "dispute", "agree", "different"
    (the opposites are said of two different things: neither an agreement nor a dispute) or
    None (no listed opposites, or nothing to conclude from them)."""
    wa, wb = _words(a), _words(b)
    if {w for w in wa if w in QUANTIFIERS} != {w for w in wb if w in QUANTIFIERS}:
        return None
    la, lb = {_lemma(w) for w in wa}, {_lemma(w) for w in wb}
    pairs = [
        (x, y, OPPOSITE[x][y])
        for x in la
        if x in OPPOSITE
        for y in OPPOSITE[x]
        if y in lb and y not in la and x not in lb
    ]
    if not pairs:
        return None
    if _contrasted(wa, wb, {x for x, _, _ in pairs} | {y for _, y, _ in pairs}):
        return "different"
    kinds = {k for _, _, k in pairs}
    odd = (sum(w in NEGATORS for w in wa) + sum(w in NEGATORS for w in wb)) % 2 == 1
    if not odd:
        return "dispute"
    return "agree" if kinds == {"complement"} else None


# words that carry no subject of their own: left out before two sentences' slots are compared
_FRAME = NEGATORS | {
    "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "has", "have", "had",
    "will", "would", "shall", "should", "can", "could", "may", "might", "must", "stay", "stays",
    "stayed", "remain", "remains", "remained", "still", "again", "also",
}  # fmt: skip
# words whose difference is not a different subject ("its inspection" / "three inspections")
_NOT_A_SUBJECT = {
    "the", "a", "an", "its", "his", "her", "their", "our", "my", "your", "this", "that", "these",
    "those", "in", "on", "at", "by", "for", "of", "to", "from", "with", "and", "or", "but", "one",
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "until", "till",
    "before", "after", "since", "during", "over", "through", "about", "as", "than",
}  # fmt: skip


def _contrasted(wa: list[str], wb: list[str], opposites: set[str]) -> bool:
    """The two sentences speak of two different things: a word only one of them has stands
    where a word only the other has stands, between the same words ("the *north* entrance
    will stay open" / "the *south* entrance will be closed"; the opposites count as one word).
    Without it, bench/sentence_pairs.json's fourth set read its four pairs of different facts
    as disputes (`python -m bench compare pairs`)."""

    def frame(words: list[str]) -> list[str]:  # plurals as their singular: "inspection(s)"
        return [
            "<opposite>" if _lemma(w) in opposites else w[:-1] if _plural(w) else w
            for w in words
            if w not in _FRAME
        ]

    fa, fb = frame(wa), frame(wb)
    only_a, only_b = set(fa) - set(fb), set(fb) - set(fa)

    def slots(f: list[str], only: set[str]) -> set[tuple[str, str]]:
        padded = ["<start>", *f, "<end>"]
        return {
            (padded[k - 1], padded[k + 1])
            for k in range(1, len(padded) - 1)
            if padded[k] in only and padded[k] not in _NOT_A_SUBJECT
        }

    return bool(slots(fa, only_a) & slots(fb, only_b))


def _plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))
