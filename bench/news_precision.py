"""How often is a news sentence shown as "strengthens" / "weakens" right? ClaimDiff's dev topics in
the document-like mix (annotated pairs plus same-topic unrelated ones, as a news pool looks to the
news stage), judged the way a search judges them: A -> B under the model's cuts for document-like
streams, and dropped where the same relation also holds for B's negation (pipeline.news).

Prints precision and recall of each relation for the ClaimDiff comparator (models/comparator) and
for the relation model (the trunk the bundle's pair model names, with its fitted news cuts), in one
run:   python bench/news_precision.py [--split dev]
"""

from __future__ import annotations

import argparse
from pathlib import Path


def decide(judge, pairs, negation: bool) -> list[str]:
    """Each pair's relation as the news stage decides it (`negation`: its rule, one_sided)."""
    from perspect.pipeline.news import one_sided

    if not negation:
        return [r.relation for r in judge.compare([(p.claim_a, p.claim_b) for p in pairs], "doc")]
    return [r.relation for p in pairs for r in one_sided(judge, [p.claim_a], p.claim_b)]


def report(name: str, gold: list[str], got: list[str]) -> None:
    cells = []
    for rel in ("strengthen", "weaken"):
        shown = sum(g == rel for g in got)
        right = sum(g == rel and y == rel for g, y in zip(got, gold, strict=True))
        total = sum(y == rel for y in gold)
        prec = right / shown if shown else float("nan")
        cells.append(
            f"{rel} P {100 * prec:5.1f} % ({right}/{shown}) R {100 * right / total:5.1f} %"
        )
    print(f"{name:<44} " + "   ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="dev")
    ap.add_argument("--data", type=Path, default=Path("data/claimdiff"))
    ap.add_argument("--trunk", default=None, help="a trunk folder (default: the bundle's)")
    args = ap.parse_args()
    from perspect.core import paths
    from perspect.core.datasets import claimdiff as cd
    from perspect.reranker import stance_trunk
    from perspect.reranker.comparator import Comparator
    from perspect.reranker.relation_judge import RelationJudge

    pairs = cd.mixed(cd.load_pairs(args.data, args.split))
    gold = [p.relation for p in pairs]
    print(f"ClaimDiff {args.split}, document-like mix: {len(pairs)} pairs "
          f"({gold.count('strengthen')} strengthen, {gold.count('weaken')} weaken)")  # fmt: skip
    cmp = Comparator.load(paths.comparator_model())
    report("comparator (doc cuts)", gold, decide(cmp, pairs, False))
    report("comparator (doc cuts) + negation rule", gold, decide(cmp, pairs, True))
    folder = args.trunk or stance_trunk.bundled()
    judge = RelationJudge.of(stance_trunk.StanceTrunk.load(folder)) if folder else None
    if judge is None:
        print("relation model: none in the bundle (or no fitted news cuts)")
        return
    report("relation model (news cuts)", gold, decide(judge, pairs, False))
    report("relation model (news cuts) + negation rule", gold, decide(judge, pairs, True))


if __name__ == "__main__":
    main()
