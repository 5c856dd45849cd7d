"""Cue words that tell an argument from a report, as features of the mining decision.

Why words at all, beside the relation model: the model was trained on curated perspectives, which
are all arguments; it never saw "The council will vote on Tuesday" or "Smith said the plan was
approved in 2019", and can read such a sentence as taking the side its topic suggests. Argument
mining without a trained detector (and ArgumenText's detector before its BERT days) leans on the
same markers: attribution and reporting verbs, dates and figures for reports; modal and
evaluative words and connectives for arguments. Each cue is a count, and the fitted stack
(perspect.core.model.decisions.MiningDecision) weighs it; none decides alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

_REPORT = re.compile(
    r"\b(said|says|say|told|tells|according to|announced|announces|reported|reports|stated|"
    r"added|explained|wrote|spokes(?:man|woman|person)|press release|interview(?:ed)?|"
    r"confirmed|declined to comment|will vote|voted|is expected to|are expected to|met|meeting)\b",
    re.I,
)
_EVENT = re.compile(
    r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|today|tonight|"
    r"last (?:week|month|year)|this (?:week|month|year)|next (?:week|month|year)|"
    r"january|february|march|april|may|june|july|august|september|october|november|"
    r"december|(?:19|20)\d\d)\b|\d",
    re.I,
)
_ARGUE = re.compile(
    r"\b(should|shouldn't|must|ought|need to|needs to|cannot|can't|because|therefore|thus|hence|"
    r"so that|would|harm(?:s|ful)?|benefit(?:s)?|better|worse|wrong|unfair|fair|dangerous|"
    r"important|essential|necessary|unnecessary|cruel|immoral|ethical|unethical|threat(?:ens)?|"
    r"risk(?:s)?|protect(?:s)?|violate(?:s)?|deserve(?:s)?|right to|rights|freedom|"
    r"responsibility|duty|justif(?:y|ies|ied)|outweigh(?:s)?|undermine(?:s)?)\b",
    re.I,
)
_FIRST = re.compile(r"\b(i|we|our|us|my)\b", re.I)
_QUOTE = re.compile(r"[\"“”]")

NAMES = ("report", "event", "argue", "first", "quote", "question", "words")


def cues(texts: Sequence[str]) -> dict[str, np.ndarray]:
    """Each cue's count per sentence (words: the log of its length in words)."""
    out = {k: np.zeros(len(texts)) for k in NAMES}
    for i, t in enumerate(texts):
        out["report"][i] = len(_REPORT.findall(t))
        out["event"][i] = min(3, len(_EVENT.findall(t)))
        out["argue"][i] = len(_ARGUE.findall(t))
        out["first"][i] = len(_FIRST.findall(t))
        out["quote"][i] = 1.0 if _QUOTE.search(t) else 0.0
        out["question"][i] = 1.0 if t.rstrip().endswith("?") else 0.0
        out["words"][i] = np.log1p(len(t.split()))
    return out
