"""The relation model's training rows, read from the data folders: inference pairs held out by
premise, numeric-swap contradictions, PERSPECTRUM stance (with negated and double-negated claims)
and equivalence pairs, ClaimDiff relations. Shared by the trainer (perspect.lab.train.relation)
and the decisions' fit (perspect.lab.relation_fit), which must split the held-out pairs the same
way.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

import numpy as np

from perspect.core.datasets import claimdiff as cd
from perspect.core.datasets.negation import negate
from perspect.core.datasets.perspectrum import load_claims, load_perspectives, tune_claims_of

NLI_LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}
NLI_FILES = ("snli", "mnli_taxinli", "counterfactual", "breaking")


def held_out(key: str) -> bool:
    return int(hashlib.md5(key.encode()).hexdigest(), 16) % 10 == 0


def inference_rows(folder: Path) -> tuple[list, list]:
    """(train, held-out) rows ("nli", premise, hypothesis, label, source) over the four files."""
    train, held = [], []
    for name in NLI_FILES:
        for line in (folder / f"{name}.jsonl").open():
            r = json.loads(line)
            if r["label"] not in NLI_LABELS:
                continue
            row = ("nli", r["premise"], r["hypothesis"], NLI_LABELS[r["label"]], name)
            (held if held_out(r["premise"]) else train).append(row)
    return train, held


_NUM = re.compile(r"\b(\d{1,4})(?:\.\d+)?\b")


def numeric_swaps(rows, rng: random.Random, n: int) -> list:
    """Contradictions by changing one number of a premise (a count, a year, a percentage): the
    product compares figures in news and articles, where Breaking NLI's swaps are few."""
    out = []
    for _, p, _, _, src in rows:
        if src != "mnli_taxinli" or len(out) >= n:
            continue
        m = _NUM.search(p)
        if m is None:
            continue
        x = int(m.group(1))
        y = x + rng.choice([1, 2, 3, 5, 10]) if x > 1900 else max(0, x * rng.choice([2, 3]) + 1)
        if y == x:
            continue
        swapped = p[: m.start(1)] + str(y) + p[m.end(1) :]
        out.append(("nli", p, swapped, NLI_LABELS["contradiction"], "numeric"))
    return out


# a closing time or place phrase of at most five words after the sentence's last such preposition
_TRAILING = re.compile(
    r"^(?P<main>[A-Z][^,;:]{12,})\s+(?P<tail>(?:on|in|at|during|after|before|since|near)"
    r"(?:\s+[\w'-]+){1,4})\s*(?P<end>[.!?]?)$"
)


_LOWER_FIRST = {"The", "A", "An", "Some", "Several", "Many", "Most", "Two", "Three", "Four",
                "People", "It", "There", "This", "They", "He", "She", "We"}  # fmt: skip


def front_phrase(sentence: str) -> str | None:
    """The sentence with its closing prepositional phrase moved to the front ("The council voted
    on the rules on Monday." -> "On Monday, the council voted on the rules."), None where it has
    none."""
    m = _TRAILING.match(sentence.strip())
    if m is None:
        return None
    tail, main = m.group("tail"), m.group("main")
    first, _, rest = main.partition(" ")
    if first in _LOWER_FIRST:  # "The council" -> "the council"; "Hong Kong" stays
        main = f"{first.lower()} {rest}"
    return f"{tail[:1].upper()}{tail[1:]}, {main}{m.group('end') or '.'}"


def paraphrase_rows(rows, rng: random.Random, n: int) -> list:
    """Entailments that say the same thing in (nearly) the same words: a premise and itself, a
    premise with its closing phrase fronted. Why: Breaking NLI and the counterfactual revisions
    teach that two sentences differing by a word or two contradict each other, and a model
    trained on them alone read "On Monday the council voted on the parking rules" as
    contradicting "The council voted on the parking rules on Monday" (P .90)."""
    premises = sorted({r[1] for r in rows if r[4] in ("snli", "mnli_taxinli")})
    rng.shuffle(premises)
    out = []
    for p in premises:
        if len(out) >= n:
            break
        moved = front_phrase(p)
        if moved is not None:
            out.append(("nli", p, moved, NLI_LABELS["entailment"], "paraphrase"))
            out.append(("nli", moved, p, NLI_LABELS["entailment"], "paraphrase"))
        elif len(out) % 3 == 0:
            out.append(("nli", p, p, NLI_LABELS["entailment"], "paraphrase"))
    return out


def double_negate(claim: str) -> str:
    """'It is not true that X should not ...': the claim's meaning, negation twice (the reader's
    failure: "To say space research is a waste of money is wrong")."""
    neg = negate(claim)
    return "It is not true that " + neg[:1].lower() + neg[1:]


def perspectrum_rows(data: Path, rng: random.Random, limit: int | None = None):
    persp = load_perspectives(data)
    tune, fit = tune_claims_of(data)
    dev = load_claims(data, "dev")
    if limit:
        tune, fit, dev = tune[:limit], fit[:limit], dev[:limit]
    stance, equiv = [], []
    for c in fit:
        for cl in c.clusters:
            for p in cl.pids:
                if p not in persp:
                    continue
                y = float(cl.stance == "SUPPORT")
                stance.append(("stance", c.text, persp[p], y))
                stance.append(("stance", negate(c.text), persp[p], 1.0 - y))
                if rng.random() < 0.35:
                    stance.append(("stance", double_negate(c.text), persp[p], y))
        member = {p: i for i, cl in enumerate(c.clusters) for p in cl.pids if p in persp}
        pos, neg = [], []
        ids = sorted(member)
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                (pos if member[a] == member[b] else neg).append((a, b))
        neg = rng.sample(neg, min(len(neg), 2 * len(pos) + 2))
        for (a, b), y in [(x, 1.0) for x in pos] + [(x, 0.0) for x in neg]:
            if rng.random() < 0.5:
                a, b = b, a
            equiv.append(("equivalence", persp[a], persp[b], y))

    def gold(claims):
        return [
            (c.text, negate(c.text), persp[p], float(cl.stance == "SUPPORT"))
            for c in claims
            for cl in c.clusters
            for p in cl.pids
            if p in persp
        ]

    def equiv_gold(claims):
        out = []
        for c in claims:
            member = {p: i for i, cl in enumerate(c.clusters) for p in cl.pids if p in persp}
            ids = sorted(member)
            for i, a in enumerate(ids):
                for b in ids[i + 1 :]:
                    out.append((persp[a], persp[b], float(member[a] == member[b])))
        return out

    return (
        {"stance": stance, "equivalence": equiv},
        {"tune": gold(tune), "dev": gold(dev), "equiv_dev": equiv_gold(dev)},
    )


def claimdiff_rows(folder: Path, limit: int | None = None) -> tuple[list, list]:
    rel = {r: i for i, r in enumerate(cd.RELATIONS)}
    fit = cd.mixed(cd.load_pairs(folder, "fit"))
    dev = cd.mixed(cd.load_pairs(folder, "dev"))

    def rows(pairs):
        return [("claimdiff", p.claim_a, p.claim_b, rel[p.relation]) for p in pairs][:limit]

    return rows(fit), rows(dev)


def nli_report(p: np.ndarray, rows) -> dict:
    """Accuracy of the argmax of `p` over inference rows, in all and per source file."""
    y = np.array([r[3] for r in rows])
    hit = p.argmax(1) == y
    by = {}
    for src in sorted({r[4] for r in rows}):
        m = np.array([r[4] == src for r in rows])
        by[src] = round(100 * float(hit[m].mean()), 2)
    return {"accuracy": round(100 * float(hit.mean()), 2), "n": len(rows), "by_source": by}
