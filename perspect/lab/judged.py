"""The judged set: Perspect's own candidates for claims no curated debate was written for, each
judged twice by judges working apart (docs/judged-set.md).

Why ids only: the texts are third-party (PERSPECTRUM, the AllSides articles); the committed set is
the claims, the items' ids and the labels, and every text is read back from `../shared/data`.

The commands: perspect.lab.judged_cli.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parents[2] / "bench" / "judged"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
QUESTIONS = {
    "cp": ("for", "against", "no_side", "off_topic"),
    "ps": ("for", "neutral", "against"),
    "cn": ("strengthens", "weakens", "neither"),
}
SPLITS = (("train", 6), ("tune", 2), ("report", 2))  # tenths of the claims, by sha1


def claim_split(claim: str) -> str:
    """A claim's split by the sha1 of its casefolded text: no claim is both trained and reported."""
    tenth = int(hashlib.sha1(claim.strip().casefold().encode()).hexdigest(), 16) % 10
    for name, share in SPLITS:
        if tenth < share:
            return name
        tenth -= share
    raise AssertionError(tenth)


def claim_id(claim: str) -> str:
    return "c" + hashlib.sha1(claim.strip().encode()).hexdigest()[:10]


@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    source: str  # "internet" (../shared/data/claims) or "own" (bench/judged/own_claims.txt)
    split: str


def load_claims(shared: Path = SHARED) -> list[Claim]:
    out: list[Claim] = []
    seen: set[str] = set()
    for source, path in (
        ("internet", shared / "claims" / "internet_claims.txt"),
        ("own", HERE / "own_claims.txt"),
    ):
        for line in path.read_text(encoding="utf-8").splitlines():
            text = line.strip()
            if text and text.casefold() not in seen:
                seen.add(text.casefold())
                out.append(Claim(claim_id(text), text, source, claim_split(text)))
    return out


# --- a small BM25 for drawing candidates without an index (stdlib only) ------------------------
_STOP = set(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with should would can could do does be been have has had "
    "its it's than so we you i our your his her them what which who how why all any more most".split()
)
_WORD = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    out = []
    for w in _WORD.findall(text.lower()):
        if w in _STOP or len(w) < 2:
            continue
        for suf in ("ing", "ies", "es", "ed", "s"):
            if w.endswith(suf) and len(w) - len(suf) >= 3:
                w = w[: -len(suf)]
                break
        out.append(w)
    return out


class SmallBM25:
    def __init__(self, docs: Sequence[tuple[str, str]], k1: float = 1.2, b: float = 0.75):
        self.ids = [d for d, _ in docs]
        self.tf = [Counter(_terms(t)) for _, t in docs]
        self.len = [sum(c.values()) for c in self.tf]
        self.avg = sum(self.len) / max(1, len(self.len))
        self.post: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(self.tf):
            for t in c:
                self.post[t].append(i)
        n = len(docs)
        self.idf = {
            t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self.post.items()
        }
        self.k1, self.b = k1, b

    def top(self, query: str, k: int) -> list[tuple[str, float]]:
        score: dict[int, float] = defaultdict(float)
        for t in set(_terms(query)):
            for i in self.post.get(t, ()):
                f = self.tf[i][t]
                norm = f + self.k1 * (1 - self.b + self.b * self.len[i] / self.avg)
                score[i] += self.idf[t] * f * (self.k1 + 1) / norm
        best = sorted(score.items(), key=lambda x: (-x[1], x[0]))[:k]
        return [(self.ids[i], s) for i, s in best]


# --- texts, read back from ../shared/data --------------------------------------------------------
def perspective_texts(shared: Path = SHARED) -> dict[str, str]:
    pool = json.loads((shared / "perspectrum" / "perspective_pool_v1.0.json").read_text("utf-8"))
    return {str(p["pId"]): p["text"] for p in pool}


def evidence_texts(shared: Path = SHARED) -> dict[str, str]:
    pool = json.loads(
        (shared / "perspectrum" / "evidence_pool_partial_v1.0.json").read_text("utf-8")
    )
    return {str(e["eId"]): e["text"] for e in pool}


def _write_jsonl(path: Path, rows: Iterable[dict]) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            n += 1
    return n


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def draw_bm25(claims: Sequence[Claim], k: int, shared: Path = SHARED) -> list[dict]:
    """Wave 1: each claim's BM25 top k perspectives (the small BM25 above, so no index is needed)."""
    texts = perspective_texts(shared)
    bm25 = SmallBM25(sorted(texts.items(), key=lambda x: int(x[0])))
    rows = []
    for c in claims:
        for rank, (pid, _) in enumerate(bm25.top(c.text, k)):
            rows.append(
                {
                    "id": f"cp:{c.id}:{pid}",
                    "q": "cp",
                    "claim": c.id,
                    "pid": pid,
                    "found": [f"draw-bm25@{rank + 1}"],
                }
            )
    return rows


def merge_items(old: list[dict], new: list[dict]) -> list[dict]:
    """Items keep their first position; a candidate found again records the retriever too."""
    by_id = {r["id"]: r for r in old}
    out = list(old)
    for r in new:
        if r["id"] in by_id:
            found = by_id[r["id"]]["found"]
            found.extend(f for f in r["found"] if f not in found)
        else:
            by_id[r["id"]] = r
            out.append(r)
    return out


def item_texts(
    item: dict,
    claims: dict[str, Claim],
    ptext: dict[str, str],
    etext: dict[str, str],
    news: dict[str, dict] | None = None,
) -> dict:
    """The batch line a judge reads for one item (texts, no model output)."""
    q = item["q"]
    if q == "cp":
        return {
            "id": item["id"],
            "q": q,
            "claim": claims[item["claim"]].text,
            "perspective": ptext[item["pid"]],
        }
    if q == "ps":
        sents = paragraph_sentences(etext[item["eid"]])
        i = int(item["sent"])
        shown = " ".join(s if j != i else f">>> {s} <<<" for j, s in enumerate(sents))
        return {"id": item["id"], "q": q, "perspective": ptext[item["pid"]], "paragraph": shown}
    if q == "cn":
        art = (news or {})[item["article"]]
        return {
            "id": item["id"],
            "q": q,
            "claim": claims[item["claim"]].text,
            "title": art["title"],
            "sentence": art["sentences"][int(item["sent"])],
        }
    raise ValueError(q)


def paragraph_sentences(text: str) -> list[str]:
    """An evidence paragraph's sentences as the index cuts them (its cited spans' segmenter)."""
    from perspect.indexer.news import sentence_spans

    return [text[a:b] for a, b in sentence_spans(text)]


# news sentences (question cn) are cut by this simpler rule, fixed when the set was drawn
_SENT = re.compile(r"(?<=[.!?])\s+(?=[\"'“A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


def make_batches(items: Sequence[dict], size: int, seed: int) -> list[list[dict]]:
    """Two passes over the items, each shuffled with its own seed and cut into batches: an item's
    two judgments land in different batches (given to different judges)."""
    out = []
    for rep in (0, 1):
        order = list(items)
        random.Random(seed * 10 + rep).shuffle(order)
        for i in range(0, len(order), size):
            out.append([{**it, "rep": rep} for it in order[i : i + size]])
    return out
