"""The argument model's rows: "does B argue for A, against A, or neither?" at three levels.

- claim-perspective: PERSPECTRUM's gold perspectives (fit claims, each also with the claim
  negated and the side swapped), Touché 2023's and IBM Claim Stance's train arguments, UKP
  sentences with their topic as the claim; "neither" from UKP's non-arguments and from texts of
  other claims that share words with this one (TF-IDF neighbours of an unrelated claim);
- perspective-sentence: a paragraph linked to a perspective argues for it, one written under the
  claim's opposing perspectives against it, one of another claim neither; the label reaches the
  paragraph's sentences through the max over them (multiple-instance rows, `Bag`);
- claim-sentence: UKP (its held-out topics excluded, they measure cross-topic);
- direction (issue 61, `../shared/data/direction`): pairs in which B argues for or against A at
  every level of a debate, most with both directions on one A, so that topic alone cannot tell
  them apart (a thesis and its pro and con arguments, a motion and its points, a point and its
  counter, a topic and an article's sentences, two sentences of a live debate); and denials, a
  claim or perspective negated by rule (`negate`), which must flip the side: rows whose A is a
  plain statement carry its negation as `contrast`, which the trainer reads as a consistency
  term (the side flips, "neither" stays).

Labels: 0 for, 1 against, 2 neither (`LABELS`). Splits never leak: PERSPECTRUM dev and the tune
claims, Touché dev/test, IBM's test motions and the held-out UKP topics are never trained on.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from perspect.core.datasets.negation import negate
from perspect.core.datasets.perspectrum import (
    load_claims,
    load_evidence,
    load_perspectives,
    tune_claims_of,
)

LABELS = ("for", "against", "neither")
FOR, AGAINST, NEITHER = 0, 1, 2
UKP_HELD_OUT = ("minimum wage", "marijuana legalization")  # cross-topic: never trained on
SENTENCES_PER_BAG = 4


@dataclass(frozen=True)
class Row:
    """One (A, B) pair with its label; `source` names the corpus (for reports)."""

    a: str
    b: str
    label: int
    source: str
    contrast: str | None = None  # A negated: (contrast, B) takes the other side, neither stays


@dataclass(frozen=True)
class Bag:
    """A perspective and the sentences of one paragraph: the paragraph's label is the max of its
    sentences' (for: some sentence argues for A; against: some argues against and none for)."""

    a: str
    sentences: tuple[str, ...]
    label: int
    source: str = "perspectrum-evidence"


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _side(stance: str) -> int:
    return FOR if stance in ("support", "SUPPORT") else AGAINST


class Neighbours:
    """TF-IDF nearest texts of a pool: "neither" rows that share words with A but were written
    for another claim (a lexical decoy, as retrieval brings them)."""

    def __init__(self, texts: list[str]):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.texts = texts
        self.vec = TfidfVectorizer(stop_words="english", sublinear_tf=True, min_df=2)
        self.m = self.vec.fit_transform(texts)

    def near(self, query: str, k: int) -> list[int]:
        s = (self.m @ self.vec.transform([query]).T).toarray().ravel()
        return [int(i) for i in np.argsort(-s)[:k] if s[i] > 0]


def perspectrum_rows(data: Path, rng: random.Random) -> tuple[list[Row], dict[str, list[Row]]]:
    """Fit-claim rows (with negated claims) and the tune / dev gold rows (for / against)."""
    persp = load_perspectives(data)
    tune, fit = tune_claims_of(data)
    dev = load_claims(data, "dev")
    pool = list(persp.values())
    nb = Neighbours(pool)
    rows: list[Row] = []
    for c in fit:
        gold = set()
        for cl in c.clusters:
            for p in cl.pids:
                if p not in persp:
                    continue
                gold.add(persp[p])
                y = _side(cl.stance)
                rows.append(Row(c.text, persp[p], y, "perspectrum"))
                rows.append(Row(negate(c.text), persp[p], 1 - y, "perspectrum-negated"))
        # neither: perspectives sharing words with the claim, ranked 20-60 (the top ranks of a
        # pool this dense are often unlabelled arguments on the claim), and random ones
        near = [pool[i] for i in nb.near(c.text, 60)[20:] if pool[i] not in gold]
        for t in rng.sample(near, min(4, len(near))) + rng.sample(pool, 2):
            if t not in gold:
                rows.append(Row(c.text, t, NEITHER, "perspectrum-unrelated"))

    def gold_rows(claims) -> list[Row]:
        return [
            Row(c.text, persp[p], _side(cl.stance), "perspectrum")
            for c in claims
            for cl in c.clusters
            for p in cl.pids
            if p in persp
        ]

    return rows, {"tune": gold_rows(tune), "dev": gold_rows(dev)}


def evidence_bags(data: Path, rng: random.Random, claims=None) -> list[Bag]:
    """Perspective-paragraph bags of the fit claims (or `claims`): linked paragraph = for, a
    paragraph of the claim's opposite side = against, another claim's paragraph = neither."""
    from perspect.indexer.news import split_sentences

    persp = load_perspectives(data)
    ev = load_evidence(data)
    if claims is None:
        _, claims = tune_claims_of(data)
    all_eids = sorted(ev)
    sents: dict[int, tuple[str, ...]] = {}

    def sentences(eid: int) -> tuple[str, ...]:
        if eid not in sents:
            ss = [s for s in split_sentences(ev[eid]) if len(s.split()) >= 4]
            if len(ss) > SENTENCES_PER_BAG:
                r = random.Random(eid)
                ss = [ss[i] for i in sorted(r.sample(range(len(ss)), SENTENCES_PER_BAG))]
            sents[eid] = tuple(ss)
        return sents[eid]

    bags: list[Bag] = []
    for c in claims:
        own = {e for cl in c.clusters for e in cl.evidence if e in ev}
        for cl in c.clusters:
            mine = [e for e in cl.evidence if e in ev]
            other = [
                e
                for o in c.clusters
                if o.stance != cl.stance
                for e in o.evidence
                if e in ev and e not in mine
            ]
            pids = [p for p in cl.pids if p in persp][:2]
            for p in pids:
                for e in mine[:2]:
                    if sentences(e):
                        bags.append(Bag(persp[p], sentences(e), FOR))
                for e in rng.sample(other, min(1, len(other))):
                    if sentences(e):
                        bags.append(Bag(persp[p], sentences(e), AGAINST))
                if mine:
                    e = rng.choice(all_eids)
                    if e not in own and sentences(e):
                        bags.append(Bag(persp[p], sentences(e), NEITHER))
    return bags


def touche_rows(folder: Path) -> dict[str, list[Row]]:
    """Touché 2023 by its own split, each split with "neither" rows: an argument of another claim
    of the same split sharing words with this claim."""
    rows = read_jsonl(folder / "touche23_stance.jsonl")
    out: dict[str, list[Row]] = {}
    for split in ("train", "dev", "test"):
        part = [r for r in rows if r["split"] == split]
        out[split] = [Row(r["claim"], r["text"], _side(r["stance"]), "touche") for r in part]
        out[split] += _decoys(part, "claim", "touche-unrelated", per_claim=2)
    return out


def ibm_rows(folder: Path) -> dict[str, list[Row]]:
    """IBM Claim Stance by motion split (train / test), with "neither" decoys from other motions."""
    rows = read_jsonl(folder / "ibm_claim_stance.jsonl")
    out: dict[str, list[Row]] = {}
    for split in ("train", "test"):
        part = [r for r in rows if r["split"] == split]
        out[split] = [Row(r["claim"], r["text"], _side(r["stance"]), "ibm") for r in part]
        out[split] += _decoys(part, "claim", "ibm-unrelated", per_claim=6)
    return out


def _decoys(part: list[dict], key: str, source: str, per_claim: int) -> list[Row]:
    texts = [r["text"] for r in part]
    if len(texts) < 4:
        return []
    nb = Neighbours(texts)
    out = []
    for claim in sorted({r[key] for r in part}):
        got = [i for i in nb.near(claim, 40) if part[i][key] != claim][:per_claim]
        out += [Row(claim, texts[i], NEITHER, source) for i in got]
    return out


def ukp_rows(folder: Path, held_out=UKP_HELD_OUT) -> dict[str, list[Row]]:
    """UKP sentences with their topic as the claim: "train" (topics not held out, their train
    split), "val" (those topics' val split), one entry per held-out topic (all of its rows) and,
    for a cut fitted on a held-out topic, "<topic>:fit" (its train and val rows) and
    "<topic>:test" (its test rows, which only report)."""
    label = {"support": FOR, "oppose": AGAINST, "none": NEITHER}
    out: dict[str, list[Row]] = {"train": [], "val": []}
    for r in read_jsonl(folder / "ukp_sentential.jsonl"):
        row = Row(r["topic"], r["text"], label[r["label"]], "ukp")
        if r["topic"] in held_out:
            out.setdefault(r["topic"], []).append(row)
            part = "test" if r["split"] == "test" else "fit"
            out.setdefault(f"{r['topic']}:{part}", []).append(row)
        elif r["split"] == "train":
            out["train"].append(row)
        elif r["split"] == "val":
            out["val"].append(row)
    return out


def ukp_pages(folder: Path, topic: str) -> dict[str, list[dict]]:
    """A topic's sentences grouped by page (url), in file order: the documents of the mining
    bench."""
    pages: dict[str, list[dict]] = {}
    for r in read_jsonl(folder / "ukp_sentential.jsonl"):
        if r["topic"] == topic:
            pages.setdefault(r["url"], []).append(r)
    return pages


DIRECTION_LABELS = {"for": FOR, "against": AGAINST, "neither": NEITHER}
DIRECTION_LEVELS = (
    "argument-argument", "thesis-point", "point-counter", "claim-sentence", "sentence-sentence",
)  # fmt: skip


def negatable(a: str) -> bool:
    """A plain statement short enough that the rule's negation reads as its denial (not a
    question, not a paragraph)."""
    return not a.rstrip().endswith("?") and "\n" not in a and len(a.split()) <= 30


def direction_rows(folder: Path, split: str) -> list[Row]:
    """The direction data's rows of one split (`rephrase` rows left out: restating A is not an
    argument for it; `python -m bench argument direction` reports them apart). Source:
    `direction-<level>`, and `direction-<level>-neither` for the live debates' unrelated pairs
    (capped apart)."""
    out = []
    for r in read_jsonl(folder / f"{split}.jsonl"):
        y = DIRECTION_LABELS.get(r["label"])
        if y is None:
            continue
        src = f"direction-{r['level']}" + ("-neither" if y == NEITHER else "")
        con = negate(r["a"]) if split == "train" and negatable(r["a"]) else None
        if r["level"] not in ("argument-argument", "thesis-point"):
            con = None  # the live debates' clauses negate badly; topics are questions
        out.append(Row(r["a"], r["b"], y, src, con))
    return out


def denial_rows(data: Path, direction: Path, rng: random.Random, n: int) -> list[Row]:
    """A claim against its own negation, and a gold perspective negated against its claim (the
    side flips): "Plastic bags don't harm the environment" does not support banning them. From
    PERSPECTRUM's fit claims and the direction data's train theses."""
    persp = load_perspectives(data)
    _, fit = tune_claims_of(data)
    rows = []
    for c in fit:
        rows.append(Row(c.text, negate(c.text), AGAINST, "denial-claim"))
        for cl in c.clusters:
            for p in cl.pids[:1]:
                if p in persp and negatable(persp[p]):
                    rows.append(Row(c.text, negate(persp[p]), 1 - _side(cl.stance), "denial"))
    theses = sorted({
        r["a"] for r in read_jsonl(direction / "train.jsonl")
        if r["level"] in ("argument-argument", "thesis-point") and negatable(r["a"])
    })  # fmt: skip
    rows += [Row(t, negate(t), AGAINST, "denial-claim") for t in theses]
    rng.shuffle(rows)
    return rows[:n]


def fingerprints(folder: Path) -> list[dict]:
    out = []
    for name in ("touche23_stance.jsonl", "ibm_claim_stance.jsonl", "ukp_sentential.jsonl"):
        h = hashlib.sha256((folder / name).read_bytes()).hexdigest()
        out.append({"file": f"argument/{name}", "sha256": h})
    return out


def direction_fingerprints(folder: Path) -> list[dict]:
    return [
        {
            "file": f"direction/{name}",
            "sha256": hashlib.sha256((folder / name).read_bytes()).hexdigest(),
        }
        for name in ("train.jsonl", "dev.jsonl")
    ]
