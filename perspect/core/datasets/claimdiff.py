"""Reading ClaimDiff (Ko et al. 2023) in its upstream file names, and the splits Perspect uses.

ClaimDiff-S and ClaimDiff-W hold the same claim pairs with two binary labels (A strengthens B; A
weakens B); Perspect reads them as one three-way relation. There is no dev split upstream, so one is
carved from train by topic: `dev` (20 % of topics), `tune` (20 %, where thresholds are fitted) and
`fit` (the rest, where models train); no topic is in two of them. Topics are dealt out in a fixed
cycle after sorting them by their number of weaken pairs (then size, then sha256): weaken pairs
cluster in a few topics (10.6 % of train), and a plain hash left dev with 16 of them.

Unrelated pairs: upstream's test-full ("test-doc") adds every non-overlapping sentence pair of an
article pair, most of which bear on nothing (19.4 % strengthen, 7.5 % weaken). Train has no such
file, so `mixed` builds that distribution from a split's own topics: claim A of one annotated pair
beside claim B of another pair of the same topic (other article, never an annotated pair), labelled
neither. They are assumed unrelated; some will not be, which makes the mix harder, not easier.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from perspect.core.errors import PerspectError

S_FILE = "ClaimDiff-S/ClaimDiff-strength-{split}.json"
W_FILE = "ClaimDiff-W/ClaimDiff-weak-{split}.json"
RELATIONS = ("neither", "strengthen", "weaken")  # the comparator's classes, in this order
# the deal of sorted topics, 20 at a time: 4 dev, 4 tune, 12 fit
_CYCLE = "dfftfdfftffdftfdfftf"
# upstream test-full's shares (docs/evaluation.md): what a news pool looks like to the comparator
DOC_SHARES = {"strengthen": 0.1935, "weaken": 0.075}


@dataclass(frozen=True)
class ClaimPair:
    pair_id: str
    topic: str
    date: str
    claim_a: str
    claim_b: str
    article_a: str
    article_b: str
    relation: str  # one of RELATIONS
    rationale: tuple[str, ...]  # phrases of claim_a (empty for neither)
    annotated: bool = True  # False: an unrelated pair built by `mixed`


def topic_splits(s_rows: list[dict], w_rows: dict[str, dict]) -> dict[str, str]:
    """topic -> fit / tune / dev, stratified by weaken pairs (module docstring)."""
    stats: dict[str, list[int]] = {}
    for r in s_rows:
        st = stats.setdefault(r["topic"], [0, 0])
        st[0] += bool(w_rows.get(r["pair_id"], {}).get("relation"))
        st[1] += 1
    order = sorted(
        stats,
        key=lambda t: (-stats[t][0], -stats[t][1], hashlib.sha256(t.encode()).hexdigest()),
    )
    names = {"d": "dev", "t": "tune", "f": "fit"}
    return {t: names[_CYCLE[i % len(_CYCLE)]] for i, t in enumerate(order)}


def _records(path: Path) -> list[dict]:
    if not path.is_file():
        raise PerspectError(
            f"missing {path}",
            hint="point --data at a ClaimDiff folder (ClaimDiff-S/, ClaimDiff-W/ as upstream)",
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise PerspectError(f"{path} is not valid JSON: {e}") from None
    rows = raw["data"] if isinstance(raw, dict) and "data" in raw else raw
    if not isinstance(rows, list):
        raise PerspectError(f"{path}: expected a list of pairs (or {{'data': [...]}})")
    return rows


def load_pairs(folder: str | Path, split: str) -> list[ClaimPair]:
    """Pairs of `split`: upstream's `train`, `test`, `test-full`, or Perspect's `fit`, `tune`,
    `dev` (carved from train by topic)."""
    folder = Path(folder)
    file_split = split if split in ("train", "test", "test-full") else "train"
    s_rows = _records(folder / S_FILE.format(split=file_split))
    w_path = folder / W_FILE.format(split=file_split)
    w_rows = {r["pair_id"]: r for r in _records(w_path)}
    carve = topic_splits(s_rows, w_rows) if file_split != split else {}
    out = []
    for r in s_rows:
        if carve and carve[r["topic"]] != split:
            continue
        w = w_rows.get(r["pair_id"])
        if w is None:
            raise PerspectError(f"pair {r['pair_id']} is in the -S file but not in {w_path}")
        s_pos, w_pos = bool(r["relation"]), bool(w["relation"])
        if s_pos and w_pos:
            raise PerspectError(f"pair {r['pair_id']} is labelled both strengthen and weaken")
        rel = "strengthen" if s_pos else "weaken" if w_pos else "neither"
        rationale = (r if s_pos else w)["rationale"] if rel != "neither" else []
        out.append(
            ClaimPair(
                str(r["pair_id"]),
                r["topic"],
                r.get("date", ""),
                r["claim_a"],
                r["claim_b"],
                r.get("article_a", ""),
                r.get("article_b", ""),
                rel,
                tuple(x for x in rationale if x and x.strip()),
            )
        )
    if not out:
        raise PerspectError(f"no ClaimDiff pairs for split {split!r} in {folder}")
    return out


def unrelated_pairs(pairs: list[ClaimPair], n: int, seed: int = 13) -> list[ClaimPair]:
    """`n` in-topic pairs that no annotation joins (A of one pair, B of another, other article)."""
    by_topic: dict[str, list[ClaimPair]] = {}
    for p in pairs:
        by_topic.setdefault(p.topic, []).append(p)
    seen = {(p.claim_a, p.claim_b) for p in pairs}
    cands = []
    for _, ps in sorted(by_topic.items()):
        for x in ps:
            for y in ps:
                if x is y or x.article_a == y.article_b or (x.claim_a, y.claim_b) in seen:
                    continue
                cands.append((x, y))
    rng = random.Random(seed)
    rng.shuffle(cands)
    out, used = [], set()
    for x, y in cands:
        if len(out) >= n:
            break
        if (x.claim_a, y.claim_b) in used:
            continue
        used.add((x.claim_a, y.claim_b))
        out.append(
            ClaimPair(
                f"u-{x.pair_id[:8]}-{y.pair_id[:8]}",
                x.topic,
                x.date,
                x.claim_a,
                y.claim_b,
                x.article_a,
                y.article_b,
                "neither",
                (),
                annotated=False,
            )
        )
    return out


def mixed(pairs: list[ClaimPair], seed: int = 13) -> list[ClaimPair]:
    """The pairs plus enough unrelated ones that strengthen makes up upstream test-full's share."""
    n_s = sum(p.relation == "strengthen" for p in pairs)
    target = round(n_s / DOC_SHARES["strengthen"])
    return pairs + unrelated_pairs(pairs, max(0, target - len(pairs)), seed)


def data_fingerprints(folder: str | Path) -> list[dict]:
    folder = Path(folder)
    files = [folder / S_FILE.format(split="train"), folder / W_FILE.format(split="train")]
    return [
        {
            "file": f.relative_to(folder).as_posix(),
            "size": f.stat().st_size,
            "sha256": hashlib.sha256(f.read_bytes()).hexdigest(),
        }
        for f in files
        if f.is_file()
    ]


_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Words and punctuation, lower-cased: the unit of rationale token F1 (the paper used spaCy's
    tokenizer; for English news text the two split the same words)."""
    return [t.lower() for t in _TOKEN.findall(text)]


def rationale_spans(claim: str, phrases: tuple[str, ...]) -> list[tuple[int, int]]:
    """Character spans of the rationale phrases in the claim (exact, then case-insensitive);
    phrases not found are dropped."""
    spans = []
    low = claim.lower()
    for ph in phrases:
        ph = ph.strip()
        i = claim.find(ph)
        if i < 0:
            i = low.find(ph.lower())
        if i >= 0:
            spans.append((i, i + len(ph)))
    return sorted(spans)


def articles(folder: str | Path) -> list[dict]:
    """ClaimDiff train's sentences regrouped into their articles, as news records (`id`, `title`,
    `topic`, `date`, `text`: one sentence per paragraph, in first-seen order): a demo news pool.
    Article B's date is not released; its pair's date (article A's) stands in for it."""
    folder = Path(folder)
    by_title: dict[str, dict] = {}
    for r in _records(folder / S_FILE.format(split="train")):
        for claim, title in (
            (r["claim_a"], r.get("article_a")),
            (r["claim_b"], r.get("article_b")),
        ):
            if not title:
                continue
            art = by_title.setdefault(
                title,
                {
                    "id": "cd-" + hashlib.sha256(title.encode("utf-8")).hexdigest()[:12],
                    "title": title,
                    "topic": r["topic"],
                    "date": r.get("date"),
                    "sentences": [],
                },
            )
            if claim not in art["sentences"]:
                art["sentences"].append(claim)
    return [
        {k: v for k, v in a.items() if k != "sentences"} | {"text": "\n\n".join(a["sentences"])}
        for a in by_title.values()
    ]
