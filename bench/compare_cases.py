"""Does `perspect compare` find disputes where two articles contradict each other?

bench/compare_cases.json holds hand-written article pairs: sentence i of A and sentence i of B
report the same fact and either agree or contradict. Each case is compared as `perspect compare`
does (prefilter, comparator, one link per sentence of A); a gold pair counts as found when A's
sentence links to its partner with the right relation. Prints, per case and in all: disputes
found (recall of "dispute"), agreements found, disputes called agreement (the failure that made
the fire articles read as ten agreements), and links to the wrong sentence.

    python bench/compare_cases.py [--model models/comparator]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

CASES = Path(__file__).with_name("compare_cases.json")


def score_case(case: dict, comparator, encoder, stance=None) -> Counter:
    from perspect.pipeline.compare import Article, compare_articles

    with tempfile.TemporaryDirectory() as tmp:
        fa, fb = Path(tmp) / "a.md", Path(tmp) / "b.md"
        fa.write_text(f"# {case['name']} (A)\n" + "\n\n".join(p[0] for p in case["pairs"]))
        fb.write_text(f"# {case['name']} (B)\n" + "\n\n".join(p[1] for p in case["pairs"]))
        a, b = Article.read(fa), Article.read(fb)
    if len(a.sentences) != len(case["pairs"]) or len(b.sentences) != len(case["pairs"]):
        raise SystemExit(f"{case['name']}: the sentence splitter did not keep one fact a sentence")
    res = compare_articles(a, b, comparator, encoder, stance=stance)
    link = {x.a: x for x in res.links}
    out: Counter = Counter()
    for i, (_, _, gold) in enumerate(case["pairs"]):
        x = link.get(i)
        out[f"gold_{gold}"] += 1
        if x is None:
            out[f"{gold}_missed"] += 1
        elif x.b != i:
            out[f"{gold}_wrong_sentence"] += 1
        elif (x.relation == "weakens") == (gold == "dispute"):
            out[f"{gold}_found"] += 1
        else:
            out[f"{gold}_as_{'agreement' if x.relation == 'strengthens' else 'dispute'}"] += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=None)
    ap.add_argument(
        "--no-stance", action="store_true", help="the comparator alone (no stance trunk disputes)"
    )
    ap.add_argument("--trunk", default=None, help="a trunk folder (default: the bundle's)")
    args = ap.parse_args()
    from perspect.core import paths
    from perspect.core.model import bundle
    from perspect.pipeline.compare import SentenceEncoder
    from perspect.reranker.comparator import Comparator

    cmp = Comparator.open(args.model or paths.comparator_model())
    dense = paths.dense_model_dir()
    enc = SentenceEncoder(
        bundle.resolve(dense) if bundle.is_bundle(dense) else paths.resolve_base(None)
    )
    from perspect.reranker import stance_trunk

    folder = None if args.no_stance else (args.trunk or stance_trunk.bundled())
    stance = stance_trunk.StanceTrunk.load(folder, serving=True) if folder else None
    print(f"stance trunk: {folder or 'none (the comparator alone)'}")
    total: Counter = Counter()
    first: Counter = Counter()  # the three cases of issue 33 (the earlier table)
    print(f"{'case':<16} {'disputes found':>15} {'agreements found':>17} {'dispute->agree':>15}")
    for case in json.loads(CASES.read_text())["cases"]:
        c = score_case(case, cmp, enc, stance)
        total += c
        if "kind" not in case:
            first += c
        print(
            f"{case['name']:<16} {c['dispute_found']:>9}/{c['gold_dispute']:<5} "
            f"{c['agree_found']:>11}/{c['gold_agree']:<5} {c['dispute_as_agreement']:>15}"
        )
    print(
        f"{'all':<16} {total['dispute_found']:>9}/{total['gold_dispute']:<5} "
        f"{total['agree_found']:>11}/{total['gold_agree']:<5} {total['dispute_as_agreement']:>15}"
    )
    print(
        f"{'first three':<16} {first['dispute_found']:>9}/{first['gold_dispute']:<5} "
        f"{first['agree_found']:>11}/{first['gold_agree']:<5} {first['dispute_as_agreement']:>15}"
    )
    print("other outcomes:", {k: v for k, v in sorted(total.items()) if not k.startswith("gold")})


if __name__ == "__main__":
    main()
