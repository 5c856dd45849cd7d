"""Join the two judges' labels of each item (docs/judged-set.md): agreement per question, raw
and Cohen's kappa, into `bench/judged/manifest.json`; the items both judges labelled alike (or a
third judge settled) into `bench/judged/labels.jsonl`, ids and labels only."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

from perspect.lab.judged import HERE, QUESTIONS, Claim, _write_jsonl

_BATCH = re.compile(r"batch-(\d+)-(\w+)-r(\d)\.jsonl$")


def kappa(pairs: list[tuple[str, str]]) -> float:
    """Cohen's kappa of two judges' labels over the same items."""
    n = len(pairs)
    if not n:
        return float("nan")
    agree = sum(a == b for a, b in pairs) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    chance = sum(ca[k] * cb[k] for k in ca) / (n * n)
    return (agree - chance) / (1 - chance) if chance < 1 else 1.0


def _read_judgments(folder: Path) -> dict[str, dict[int, str]]:
    """item id -> {rep: label}, from every batch whose judge's output exists (out-NNN.jsonl)."""
    got: dict[str, dict[int, str]] = defaultdict(dict)
    for batch in sorted(folder.glob("batch-*.jsonl")):
        m = _BATCH.search(batch.name)
        out = folder / f"out-{m.group(1)}.jsonl"
        if not out.exists():
            continue
        rep = int(m.group(3))
        asked = {json.loads(x)["id"]: json.loads(x)["q"] for x in batch.read_text().splitlines()}
        for line in out.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("id") in asked and row.get("label") in QUESTIONS[asked[row["id"]]]:
                got[row["id"]][rep] = row["label"]
    third = folder / "settled.jsonl"  # a third judge's labels of disagreements, where asked
    if third.exists():
        for line in third.read_text().splitlines():
            row = json.loads(line)
            got[row["id"]][2] = row["label"]
    return got


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tally(folder: Path, claims: list[Claim], items: list[dict]) -> int:
    judged = _read_judgments(folder)
    by_claim = {c.id: c for c in claims}
    pairs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    rows = []
    for it in items:
        got = judged.get(it["id"], {})
        if 0 not in got or 1 not in got:
            continue
        a, b = got[0], got[1]
        pairs[it["q"]].append((a, b))
        label = a if a == b else (got.get(2) if got.get(2) in (a, b) else None)
        rows.append(
            {
                "id": it["id"],
                "q": it["q"],
                "claim": it["claim"],
                "split": by_claim[it["claim"]].split,
                "labels": [a, b],
                "label": label,
            }
        )
    labels_path = HERE / "labels.jsonl"
    _write_jsonl(labels_path, rows)
    agreement = {}
    for q, ps in sorted(pairs.items()):
        coarse = None
        if q == "cp":  # bears (a side) or not, and the side where both say it bears
            bear = [(a in ("for", "against"), b in ("for", "against")) for a, b in ps]
            sided = [(a, b) for a, b in ps if a in ("for", "against") and b in ("for", "against")]
            coarse = {
                "bears_agree": round(sum(x == y for x, y in bear) / len(bear), 4),
                "bears_kappa": round(kappa([(str(x), str(y)) for x, y in bear]), 4),
                "side_agree_where_both_sided": round(
                    sum(a == b for a, b in sided) / max(1, len(sided)), 4
                ),
            }
        agreement[q] = {
            "items": len(ps),
            "agree": round(sum(a == b for a, b in ps) / len(ps), 4),
            "kappa": round(kappa(ps), 4),
            **({"coarse": coarse} if coarse else {}),
        }
    kept = [r for r in rows if r["label"]]
    manifest = {
        "what": "Perspect's own candidates judged twice by judges working apart (docs/judged-set.md)",
        "form": "bench/judged/FORM.txt",
        "form_sha256": _sha(HERE / "FORM.txt"),
        "items_sha256": _sha(HERE / "items.jsonl"),
        "labels_sha256": _sha(labels_path),
        "claims": {
            "total": len(claims),
            "by_source": dict(Counter(c.source for c in claims)),
            "by_split": dict(Counter(c.split for c in claims)),
            "sources": {
                "internet": "../shared/data/claims/internet_claims.txt (sha256 "
                "b9f79f471114023909d267ba5f1310cfb58fc6d32e7a6ed9866b298f526deca9)",
                "own": "bench/judged/own_claims.txt",
            },
        },
        "items_drawn": dict(Counter(i["q"] for i in items)),
        "judged_twice": {q: len(p) for q, p in pairs.items()},
        "judgments": 2 * sum(len(p) for p in pairs.values()),
        "agreed_or_settled": dict(Counter(r["q"] for r in kept)),
        "labels": {q: dict(Counter(r["label"] for r in kept if r["q"] == q)) for q in QUESTIONS},
        "agreement": agreement,
    }
    (HERE / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(
        json.dumps(
            {k: manifest[k] for k in ("judged_twice", "agreed_or_settled", "agreement")}, indent=1
        )
    )
    return 0
