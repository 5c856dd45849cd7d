"""Does `perspect compare` read two sentences as a reader would: agreement, dispute or neither?

bench/sentence_pairs.json holds hand-written sentence pairs (none from a dataset), each judged by
hand as "agree", "dispute" or "none". Each pair is read as `compare` reads two aligned sentences
(perspect.pipeline.compare.judge_pairs: the joint reader's inference under its fitted cuts, the
relation model's same-point head, the figures they state), after `same_claim`'s near copies.
Prints a confusion table per set and in all, and every miss, for a reader to check.

    python bench/sentence_pairs.py [--model models/comparator] [--relation-only]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

PAIRS = Path(__file__).with_name("sentence_pairs.json")
READ = {"weakens": "dispute", "strengthens": "agree", None: "none"}


def read_pairs(pairs: list[dict], reader, relation) -> list[str]:
    from perspect.pipeline.compare import CompareConfig, judge_pairs, same_claim

    a = [p["a"] for p in pairs]
    b = [p["b"] for p in pairs]
    idx = [(k, k) for k in range(len(pairs))]
    judged = judge_pairs(a, b, idx, relation, CompareConfig(), reader)
    return [
        "agree" if same_claim(x, y) else READ[None if got is None else got[0]]
        for x, y, got in zip(a, b, judged, strict=True)
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None, help="a comparator folder (default: the bundle's)")
    ap.add_argument("--relation-only", action="store_true", help="the trunk's inference, no reader")
    ap.add_argument("--trunk", default=None, help="a trunk folder (default: the bundle's)")
    args = ap.parse_args()
    from perspect.core import paths
    from perspect.reranker import stance_trunk
    from perspect.reranker.comparator import Comparator

    reader = None
    if not args.relation_only:
        reader = Comparator.open(args.model or paths.comparator_model())
        if not reader.reads_inference:
            raise SystemExit(f"{args.model}: this comparator has no inference head")
    relation = stance_trunk.StanceTrunk.load(args.trunk or stance_trunk.bundled(), serving=True)
    pairs = json.loads(PAIRS.read_text())["pairs"]
    got = read_pairs(pairs, reader, relation)
    print(f"reader: {'the trunk' if reader is None else args.model or 'bundle'}, "
          f"trunk: {args.trunk or stance_trunk.bundled()}")  # fmt: skip
    for name in [*sorted({p["set"] for p in pairs}), "all"]:
        rows = [(p, g) for p, g in zip(pairs, got, strict=True) if name in ("all", p["set"])]
        table = Counter((p["gold"], g) for p, g in rows)
        right = sum(v for (gold, g), v in table.items() if gold == g)
        print(f"\n{name}: {right}/{len(rows)} right")
        print("  gold \\ read    agree  dispute  none")
        for gold in ("agree", "dispute", "none"):
            cells = "".join(
                f"{table[(gold, g)]:>{w}}" for g, w in (("agree", 7), ("dispute", 9), ("none", 6))
            )
            print(f"  {gold:<12}{cells}")
    print("\nmisses:")
    for p, g in zip(pairs, got, strict=True):
        if g != p["gold"]:
            print(f"  [{p['set']}] gold {p['gold']}, read {g}: {p['a']} || {p['b']}")


if __name__ == "__main__":
    main()
