"""Negated-antonym paraphrases for the joint reader's inference head: "The council rejected the
plan" entails "The council did not approve the plan", and the other way round.

Why: the reader learned from Breaking NLI that one swapped antonym contradicts ("open" ->
"closed"), and from every corpus that an added "not" contradicts. Nothing taught it that both at
once say the same thing, so it read "The factory will stay open until 2030" against "The factory
will not close before 2030" as a dispute (P .95), and `compare` reported agreements as disputes.

Only complementary pairs are listed (not one means the other: passed / failed, alive / dead),
never gradable ones (not hot is not cold). Rows come in three kinds per sentence: the rewrite in
both directions as entailment, and the plain negation of the same word as contradiction, so that
"not" with the *same* word keeps reading as a contradiction.
"""

from __future__ import annotations

import random
import re

ENTAIL, CONTRADICT = 0, 2

# predicate adjectives (after a form of "to be"): word -> its complement
ADJECTIVES = {
    "open": "closed", "alive": "dead", "present": "absent", "legal": "illegal", "true": "false",
    "possible": "impossible", "visible": "invisible", "awake": "asleep", "guilty": "innocent",
    "correct": "incorrect", "complete": "incomplete", "safe": "unsafe", "accurate": "inaccurate",
    "available": "unavailable", "indoors": "outdoors", "inside": "outside", "married": "unmarried",
    "allowed": "forbidden", "empty": "occupied", "wet": "dry",
    "employed": "unemployed", "finished": "unfinished",
}  # fmt: skip
ADJECTIVES |= {v: k for k, v in list(ADJECTIVES.items()) if v not in ADJECTIVES}

# verbs: base, past, third person singular, complement. Left out for the senses they also have:
# lose / leave / pass / keep / miss / stop / die / deny ("lost loved ones", "left hand", "traffic passes",
# "stopped in the tunnel"); "fail" is
# kept for "failed" -> "did not pass" but never rewritten from "pass".
VERBS = {
    "fail": ("failed", "fails", "pass"), "accept": ("accepted", "accepts", "reject"),
    "reject": ("rejected", "rejects", "accept"), "approve": ("approved", "approves", "reject"),
    "win": ("won", "wins", "lose"), "remember": ("remembered", "remembers", "forget"),
    "forget": ("forgot", "forgets", "remember"), "allow": ("allowed", "allows", "forbid"),
    "forbid": ("forbade", "forbids", "allow"), "ban": ("banned", "bans", "allow"),
    "include": ("included", "includes", "exclude"), "exclude": ("excluded", "excludes", "include"),
    "succeed": ("succeeded", "succeeds", "fail"), "survive": ("survived", "survives", "die"), "obey": ("obeyed", "obeys", "disobey"),
}  # fmt: skip

# "stay open until" -> "not close before": a state kept, said as an event that does not happen
_KEPT = re.compile(
    r"\b(?:(?P<modal>will|would|can|could|should|must|may|might)\s+)?"
    r"(?P<verb>stay|stays|stayed|remain|remains|remained)\s+(?P<adj>open|closed|shut)\b"
)
_EVENT = {"open": "close", "closed": "open", "shut": "open"}

_NEGATED = re.compile(r"\b(?:not|never|no|none|nobody|nothing|neither|nor)\b|n't\b", re.I)
_BE = r"is|are|was|were|be|been"
_MODAL = r"will|would|can|could|should|must|may|might"
_AUX_BEFORE = {"has", "have", "had", "is", "are", "was", "were", "be", "been", "being", "get",
               "got", "gets", "the", "a", "an", "to", "and", "or", "another", "his", "her",
               "their", "its", "my", "our", "your", "this", "that", "these", "those"}  # fmt: skip
# a quantified subject changes what the negation says ("More people died ...")
_QUANTIFIED = re.compile(
    r"\b(?:more|most|fewer|less|than|few|many|some|all|every|several|only)\b", re.I
)
_PAST = {forms[0]: base for base, forms in VERBS.items()}
_THIRD = {forms[1]: base for base, forms in VERBS.items()}


def _adjective(s: str) -> tuple[str, str] | None:
    """(the rewrite with the complement negated, the plain negation) for 'is open'."""
    words = "|".join(sorted(ADJECTIVES, key=len, reverse=True))
    m = re.search(rf"\b({_BE})\s+({words})\b", s)
    if m is None:
        return None
    be, adj = m.group(1), m.group(2)
    head, tail = s[: m.start()], s[m.end() :]
    if be == "be":  # "could be open" -> "could not be closed"
        return (f"{head}not be {ADJECTIVES[adj]}{tail}", f"{head}not be {adj}{tail}")
    return (f"{head}{be} not {ADJECTIVES[adj]}{tail}", f"{head}{be} not {adj}{tail}")


def _verb(s: str) -> tuple[str, str] | None:
    """(rewrite, negation) for a finite verb of the list: 'passed' -> 'did not fail' / 'did not
    pass'; 'passes' -> 'does not fail'; 'will pass' -> 'will not fail'."""
    if _QUANTIFIED.search(s):
        return None
    m = re.search(rf"\b({_MODAL})\s+(\w+)\b", s)
    if m and m.group(2) in VERBS:
        base = m.group(2)
        head, tail = s[: m.start()], s[m.end() :]
        aux = m.group(1)
        return (f"{head}{aux} not {VERBS[base][2]}{tail}", f"{head}{aux} not {base}{tail}")
    for m in re.finditer(r"\b(\w+)\b", s):
        word = m.group(1)
        table, aux = (_PAST, "did") if word in _PAST else (_THIRD, "does")
        if word not in table:
            continue
        before = s[: m.start()].split()
        if not before or before[-1].lower() in _AUX_BEFORE or s[m.end() :].startswith(" to "):
            continue  # a participle ("has passed") or a noun ("the passes"), not a finite verb
        base = table[word]
        head, tail = s[: m.start()], s[m.end() :]
        return (f"{head}{aux} not {VERBS[base][2]}{tail}", f"{head}{aux} not {base}{tail}")
    return None


def _kept(s: str) -> tuple[str, str] | None:
    """(rewrite, negation) for 'will stay open until 2030' -> 'will not close before 2030'."""
    m = _KEPT.search(s)
    if m is None:
        return None
    modal, verb, adj = m.group("modal"), m.group("verb"), m.group("adj")
    aux = modal or ("did" if verb.endswith("ed") else "does" if verb.endswith("s") else "do")
    event = _EVENT[adj]
    head, tail = s[: m.start()], s[m.end() :]
    base = verb[:4] if verb.startswith("stay") else "remain"
    before = re.sub(r"^(\s+)until\b", r"\1before", tail)
    return (
        f"{head}{aux} not {event}{before}",
        f"{head}{aux} not {base} {adj}{tail}",
    )


def rewrite(sentence: str) -> tuple[str, str] | None:
    """The sentence said with its complement negated, and its plain negation; None where the
    sentence has no listed word in a place the rule can rewrite, or is negated already."""
    s = sentence.strip()
    if _NEGATED.search(s):
        return None
    return _kept(s) or _adjective(s) or _verb(s)


PER_WORD = 60


def antonym_rows(sentences, rng: random.Random, n: int) -> list:
    """Up to `n` inference rows: each rewritable sentence and its rewrite, both ways, as
    entailment; one in two also against its plain negation as contradiction. At most PER_WORD
    sentences per complement word."""
    pool = sorted(set(sentences))
    rng.shuffle(pool)
    out, per_word = [], {}
    for s in pool:
        if len(out) >= n:
            break
        pair = rewrite(s)
        if pair is None:
            continue
        same, negated = pair
        word = re.search(r"\bnot (\w+)", same).group(1)
        per_word[word] = per_word.get(word, 0) + 1
        if per_word[word] > PER_WORD:  # SNLI's "is outside" / "is indoors" would be most rows
            continue
        out.append(("nli", s, same, ENTAIL, "antonym"))
        out.append(("nli", same, s, ENTAIL, "antonym"))
        if rng.random() < 0.5:
            out.append(("nli", s, negated, CONTRADICT, "antonym"))
    return out[:n]
