"""Figures two sentences state about the same thing, parsed and compared: the explicit half of a
dispute (`perspect compare`).

Why a parser and not the model alone: "under control within three hours" against "burned for more
than eight hours" is a contradiction only through arithmetic, and a model that reads words reads
"three" and "eight" as near neighbours. Each figure is kept with its kind (a percentage, money, a
duration in seconds, how far ahead something happens, a year, a day or month name, or a count of
some noun) and the interval its wording allows ("more than 8" is (8, inf), "about 40" is 40 +- 15
%, "several hundred" 200-999, "next spring" at most 15 months ahead, "will not begin for at least
five years" five years or more ahead); two sentences conflict when
they give figures of one kind (and, for counts, of one noun) whose intervals do not meet.
The caller decides that the two sentences report the same fact (aligned, similar): figures of two
different facts differ all the time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
    "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90, "hundred": 100, "dozen": 12, "a dozen": 12, "half": 0.5, "a hundred": 100,
}  # fmt: skip
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
MONEY = ("dollars", "euros", "pounds", "dollar", "euro", "pound")
SECONDS = {
    "second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800,
    "month": 2629800, "year": 31557600, "decade": 315576000,
}  # fmt: skip
DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
ABOVE = ("more than", "over", "at least", "upwards of", "in excess of", "above", "exceeding")
BELOW = ("less than", "fewer than", "under", "within", "at most", "up to", "below", "no more than")
ABOUT = ("about", "around", "roughly", "some", "nearly", "almost", "approximately", "close to")
# quantifiers whose meaning is a share: "most customers" against "few customers"
SHARES = {"most": (0.5, 1.0), "majority": (0.5, 1.0), "few": (0.0, 0.3), "minority": (0.0, 0.5),
          "all": (1.0, 1.0), "none": (0.0, 0.0), "no": (0.0, 0.0), "half": (0.45, 0.55)}  # fmt: skip
# amounts given by their order of magnitude: "several hundred dollars", "thousands of homes"
# (a multiple of the scale: "several" 2-9, "a few" 2-5, the plural "hundreds of" 2-999)
VAGUE = {"several": (2, 9.99), "many": (2, 9.99), "a few": (2, 5), "few": (2, 5)}
VAGUE_SCALES = {"dozen": 12, "hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9}
# how far ahead "next spring" or "this year" lies, in seconds: (what is said, the latest it means)
_YEAR = SECONDS["year"]
AHEAD = {
    "next": {"week": 2 * SECONDS["week"], "month": 2 * SECONDS["month"], "year": 2 * _YEAR,
             **{s: 1.25 * _YEAR for s in ("spring", "summer", "autumn", "fall", "winter")}},
    "this": {"week": SECONDS["week"], "month": SECONDS["month"], "year": _YEAR,
             **{s: _YEAR for s in ("spring", "summer", "autumn", "fall", "winter")}},
}  # fmt: skip

_NUMBER = "|".join(sorted((re.escape(w) for w in WORDS), key=len, reverse=True))
_FIGURE = re.compile(
    rf"(?P<cur>[$£€])?\s?(?P<num>\d[\d,]*(?:\.\d+)?|\b(?:{_NUMBER})\b)"
    rf"(?:\s?(?P<scale>{'|'.join(SCALES)}))?\b\s?(?P<pct>%|percent\b|per cent\b)?",
    re.I,
)
_NOT_A_COUNT = {"no", "any", "every", "some", "each", "the", "this", "that", "which", "no-one"}
_NEXT_WORD = re.compile(r"\s*(?:-\s*)?([A-Za-z]+)")
_SHARE = re.compile(rf"\b({'|'.join(SHARES)})\b(?:\s+of)?(?:\s+the)?\s+([a-z]+)", re.I)
_VAGUE = re.compile(
    rf"\b(?:(?P<q>{'|'.join(VAGUE)})\s+(?P<s>{'|'.join(VAGUE_SCALES)})"
    rf"|(?P<p>{'|'.join(VAGUE_SCALES)})s\s+of)\b",
    re.I,
)
# "a day", "an hour": one unit, where a preposition or verb of time comes before it ("for a
# week", "within a day"), not a rate ("one pill a day")
_ONE_UNIT = re.compile(
    r"\b(?P<before>for|within|in|lasted|last|than|after|about|nearly|almost|over|under|least|"
    r"only|just)\s+(?:a|an)\s+(?P<unit>second|minute|hour|day|week|month|year|decade)\b",
    re.I,
)
_AHEAD = re.compile(rf"\b(?P<w>next|this)\s+(?P<u>{'|'.join(AHEAD['next'])})\b", re.I)
# a duration that says how long until something happens: "will not begin for at least five years"
_NOT_FOR = re.compile(
    r"\b(?:not|never)\b[^.,;]{0,30}\b(?:for|until|before)"
    r"(?:\s+another|\s+at\s+least|\s+more\s+than|\s+over)?\s*$",
    re.I,
)


@dataclass(frozen=True)
class Figure:
    # percent | money | duration | ahead (how long from now) | year | day | month | count:<noun>
    # | share:<noun>
    kind: str
    low: float
    high: float
    text: str  # the words it was read from
    span: tuple[int, int]


def _noun(word: str) -> str:
    w = word.lower()
    for suffix, repl in (("ies", "y"), ("es", "e"), ("s", "")):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            return w[: -len(suffix)] + repl
    return w


_FUNCTION = {"and", "or", "of", "to", "in", "at", "on", "the", "a", "after", "before", "when", "as"}


def _is_year(raw: str, value: float, prev: list[str], word: str) -> bool:
    if not (raw.isdigit() and len(raw) == 4 and 1800 <= value <= 2100):
        return False
    after = {
        "in",
        "since",
        "by",
        "until",
        "from",
        "before",
        "after",
        "of",
        "during",
        "early",
        "late",
    }
    return not word or word in _FUNCTION or bool(prev and prev[0].lower() in after)


def _interval(value: float, before: str) -> tuple[float, float]:
    before = before.lower()
    if any(before.endswith(w) for w in ABOVE):
        return value * (1 + 1e-9), math.inf
    if any(before.endswith(w) for w in BELOW):
        return 0.0, value
    if any(before.endswith(w) for w in ABOUT):
        return value * 0.85, value * 1.15
    return value, value


def figures(sentence: str) -> list[Figure]:
    """Every figure `sentence` states, with its kind and the interval its wording allows."""
    out = _vague(sentence)
    taken = [f.span for f in out]
    for m in _FIGURE.finditer(sentence):
        raw = m.group("num")
        if raw is None or any(s <= m.start() < t for s, t in taken):
            continue
        low = raw.lower()
        prev = sentence[: m.start()].split()[-1:]
        if low == "one" and (not prev or prev[0].lower() in _NOT_A_COUNT):
            continue  # "no one", "the one", "One of them": a pronoun
        value = WORDS[low] if low in WORDS else float(raw.replace(",", ""))
        if m.group("scale"):
            value *= SCALES[m.group("scale").lower()]
        before = sentence[max(0, m.start() - 20) : m.start()].rstrip()
        lo, hi = _interval(value, before)
        nxt = _NEXT_WORD.match(sentence, m.end())
        word = nxt.group(1).lower() if nxt else ""
        if m.group("pct"):
            kind = "percent"
        elif m.group("cur") or word in MONEY:
            kind = "money"
        elif _noun(word) in SECONDS:
            kind, unit = "duration", SECONDS[_noun(word)]
            lo, hi = lo * unit, hi * unit
        elif _is_year(raw, value, prev, word):
            kind = "year"
        elif word and word not in _FUNCTION:
            kind = f"count:{_noun(word)}"
        else:
            continue
        out.append(Figure(kind, lo, hi, sentence[m.start() : m.end()].strip(), m.span()))
    for m in _ONE_UNIT.finditer(sentence):
        unit = SECONDS[m.group("unit").lower()]
        lo, hi = _interval(1.0, sentence[: m.start("before")] + m.group("before"))
        out.append(Figure("duration", lo * unit, hi * unit, m.group(0), m.span()))
    out += _ahead(sentence, out)
    lower = sentence.lower()
    for names, kind in ((DAYS, "day"), (MONTHS, "month")):
        for i, name in enumerate(names):
            for m in re.finditer(rf"\b{name}\b", lower):
                if kind == "month" and name == "may" and not sentence[m.start()].isupper():
                    continue  # the verb
                out.append(Figure(kind, i, i, sentence[m.start() : m.end()], m.span()))
    for m in _SHARE.finditer(sentence):
        if m.group(2).lower() in ("one", "of", "more", "less", "other", "than"):
            continue
        lo, hi = SHARES[m.group(1).lower()]
        out.append(Figure(f"share:{_noun(m.group(2))}", lo, hi, m.group(0), m.span()))
    return out


def _vague(sentence: str) -> list[Figure]:
    """Amounts given by their order of magnitude, as money or a count of the noun after them."""
    out = []
    for m in _VAGUE.finditer(sentence):
        if m.group("q"):
            scale = VAGUE_SCALES[m.group("s").lower()]
            lo, hi = VAGUE[m.group("q").lower()]
        else:
            scale, (lo, hi) = VAGUE_SCALES[m.group("p").lower()], (2, 999)
        nxt = _NEXT_WORD.match(sentence, m.end())
        word = nxt.group(1).lower() if nxt else ""
        if word in MONEY:
            kind = "money"
        elif word and word not in _FUNCTION:
            kind = f"count:{_noun(word)}"
        else:
            continue
        out.append(Figure(kind, lo * scale, hi * scale, m.group(0), m.span()))
    return out


def _ahead(sentence: str, found: list[Figure]) -> list[Figure]:
    """How long from now something happens: "next spring" is at most 15 months ahead, "this
    year" at most one; a duration after "not ... for" or "not ... until" ("will not begin for at
    least five years") is at least that long ahead."""
    out = []
    for m in _AHEAD.finditer(sentence):
        latest = AHEAD[m.group("w").lower()][m.group("u").lower()]
        out.append(Figure("ahead", 0.0, latest, m.group(0), m.span()))
    for f in found:
        if f.kind == "duration" and _NOT_FOR.search(sentence[: f.span[0]]):
            out.append(Figure("ahead", f.low, math.inf, f.text, f.span))
    return out


def conflicts(a: str, b: str) -> list[tuple[Figure, Figure]]:
    """Pairs of figures of one kind in `a` and `b` that cannot both hold. A kind that `a` (or
    `b`) states twice with different values is left alone: the sentence compares two things, and
    which one the other sentence speaks of is not known."""
    fa, fb = figures(a), figures(b)
    out = []
    for x in fa:
        same_a = [f for f in fa if f.kind == x.kind]
        ys = [y for y in fb if y.kind == x.kind]
        if not ys or len({(f.low, f.high) for f in same_a}) > 1:
            continue
        if len({(f.low, f.high) for f in ys}) > 1:
            continue
        y = ys[0]
        if x.high < y.low or y.high < x.low:
            out.append((x, y))
    return out
