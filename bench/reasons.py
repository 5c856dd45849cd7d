"""Cited reasons before and after the joint reader reads them back, judged blind (issue 41).

Why: `bench/reader.py` shows the reasons a search keeps; judging only those cannot say what the
read-back dropped, and judging with the reader's call in view leans on it. This runs claims
written for it (none is PERSPECTRUM's; `bench/reader.py --check` style), cites every cluster's
reason with the read-back off, prints each (perspective, reason) pair for a person to judge
("backs", "opposite", "unrelated") without the reader's probabilities, and saves them aside.
`--judged FILE` counts what each cut would show: every reason, and the reader's cut.

    python bench/reasons.py --index default [--home DIR] --json OUT
    python bench/reasons.py --judged bench/reader/reasons-fresh-2026-11-28.json
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

# written for this bench after bench/reader.py's claims were judged; none is in PERSPECTRUM
CLAIMS = [
    "Public transport should be free",
    "Voting should be compulsory",
    "Fast fashion should be taxed",
    "Remote work is better for employees than office work",
    "Children should not use social media before the age of sixteen",
    "Tourists should pay a fee to enter historic city centres",
    "Space tourism should be banned",
    "Organ donation should be opt-out",
    "Sugar taxes reduce obesity",
    "Private schools should be abolished",
    "Autonomous weapons should be prohibited",
    "Standardised testing should be scrapped",
    "Wealthy countries should accept more refugees",
    "Meat consumption should be taxed",
    "Online anonymity should be ended",
    "Gambling advertising should be banned",
]


def cite(index: str, home: str | None) -> tuple[list[dict], dict]:
    """Every cluster's cited reason with the read-back off, and the reader's P(entail) /
    P(contradict) of (reason, perspective); the reader's cuts."""
    from perspect.api import Perspect
    from perspect.core.model.decisions import RelationCuts

    p = Perspect.open(index, home=home)
    stage = p.engine().evidence_stage
    reader, cuts = stage.reader, stage.reader_cuts
    if reader is None or cuts is None:
        raise SystemExit("the bundle names no reasons' reader: nothing to compare")
    stage.reader_cuts = RelationCuts(0.0, 1.01)  # every cited reason passes
    rows = []
    for claim in CLAIMS:
        for c in p.search(claim).clusters:
            if c.why is not None:
                rows.append({"claim": claim, "perspective": c.representative.text,
                             "reason": c.why.sentence})  # fmt: skip
    probs = reader.inference([(r["reason"], r["perspective"]) for r in rows])
    for r, q in zip(rows, probs, strict=True):
        r["entail"], r["contradict"] = round(float(q[0]), 3), round(float(q[2]), 3)
    return rows, {"entail_at": cuts.entail_at, "contradict_at": cuts.contradict_at}


def count(doc: dict) -> None:
    """What each cut shows: every cited reason, those the reader reads back, and of those the
    ones that do not only restate their perspective (what a search shows: pipeline.why)."""
    from perspect.pipeline import why

    rows, cuts = doc["reasons"], doc["cuts"]
    read = [
        r
        for r in rows
        if r["entail"] >= cuts["entail_at"] and r["contradict"] < cuts["contradict_at"]
    ]
    shipped = [r for r in read if not why.restates(r["perspective"], r["reason"])]
    for name, kept in (
        ("every cited reason", rows),
        ("read back", read),
        ("+ no restatement (shipped)", shipped),
    ):
        c = Counter(r["judged"] for r in kept)
        n = max(1, len(kept))
        print(
            f"{name:<27} shown {len(kept):>3}  backs {c['backs']:>3} "
            f"({100 * c['backs'] / n:.1f} %)  opposite {c['opposite']:>2} "
            f"({100 * c['opposite'] / n:.1f} %)  unrelated {c['unrelated']:>2}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=None)
    ap.add_argument("--json", type=Path, help="save the reasons (with the reader's calls) here")
    ap.add_argument("--judged", type=Path, help="a saved run with each reason's 'judged': count")
    args = ap.parse_args()
    if args.judged:
        count(json.loads(args.judged.read_text()))
        return
    rows, cuts = cite(args.index, args.home)
    if args.json:
        doc = {"claims": CLAIMS, "cuts": cuts, "reasons": rows}
        args.json.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    for i, r in enumerate(rows):  # no probabilities here: judge blind
        print(f"[{i}] {r['claim']}\n   perspective: {r['perspective']}\n   reason: {r['reason']}\n")


if __name__ == "__main__":
    main()
