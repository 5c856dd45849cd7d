"""`perspect compare`: its cost on two long articles, and what it finds in hand-written cases.

    python -m bench compare cost [--data data/claimdiff] [--model models/comparator] [--n 200]
    python -m bench compare cases [--model DIR] [--no-stance | --no-comparator] [--trunk DIR]
    python -m bench compare pairs [--model DIR] [--relation-only] [--trunk DIR]

`cost`: how long `compare` takes for two 200-sentence articles, and what the prefilter saves. The
articles are ClaimDiff train sentences: A = the A-side claims of some topics, B = the B-side claims
of the same topics (so related pairs exist), 200 each. Prints the time with the models loaded (the
comparison itself, after one untimed warm-up), the model loading, and the comparator's rate, beside
the time all 40,000 pairs would take without the prefilter (estimated from that rate).

`cases`: does `compare` find disputes where two articles contradict each other?
bench/compare_cases.json holds hand-written article pairs: sentence i of A and sentence i of B
report the same fact and either agree or contradict. Each case is compared as `perspect compare`
does (prefilter, comparator, one link per sentence of A); a gold pair counts as found when A's
sentence links to its partner with the right relation. Prints, per case and in all: disputes found
(recall of "dispute"), agreements found, disputes called agreement (the failure that made the fire
articles read as ten agreements), and links to the wrong sentence.

`pairs`: does `compare` read two sentences as a reader would: agreement, dispute or neither?
bench/sentence_pairs.json holds hand-written sentence pairs (none from a dataset), each judged by
hand as "agree", "dispute" or "none". Each pair is read as `compare` reads two aligned sentences
(perspect.pipeline.compare.judge_pairs: the joint reader's inference under its fitted cuts, the
relation model's same-point head, the figures they state), after `same_claim`'s near copies.
Prints a confusion table per set and in all, and every miss, for a reader to check.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness

HERE = Path(__file__).resolve().parent
CASES = HERE / "compare_cases.json"
PAIRS = HERE / "sentence_pairs.json"
READ = {"weakens": "dispute", "strengthens": "agree", None: "none"}


def articles(a_text: list[str], b_text: list[str], titles=("Article A", "Article B")):
    """Two Articles read as `compare` reads files: a title line, one paragraph a sentence."""
    from perspect.pipeline.compare import Article

    with tempfile.TemporaryDirectory() as tmp:
        fa, fb = Path(tmp) / "a.md", Path(tmp) / "b.md"
        fa.write_text(f"# {titles[0]}\n" + "\n\n".join(a_text))
        fb.write_text(f"# {titles[1]}\n" + "\n\n".join(b_text))
        return Article.read(fa), Article.read(fb)


def encoder():
    """The sentence encoder `compare` prefilters with: the bundle's dense model, else the base."""
    from perspect.core import paths
    from perspect.core.model import bundle
    from perspect.pipeline.compare import SentenceEncoder

    dense = paths.dense_model_dir()
    return SentenceEncoder(
        bundle.resolve(dense) if bundle.is_bundle(dense) else paths.resolve_base(None)
    )


def model_args(p) -> None:
    p.add_argument("--model", default=None, help="a comparator folder (default: the bundle's)")


def trunk_args(p) -> None:
    model_args(p)
    p.add_argument("--trunk", default=None, help="a trunk folder (default: the bundle's)")


# ---- cost --------------------------------------------------------------------------------------


def cost(args) -> int:
    """Seconds `perspect compare` takes for two 200-sentence articles, and without prefilter."""
    from perspect.core import paths
    from perspect.core.datasets.claimdiff import load_pairs
    from perspect.pipeline.compare import compare_articles
    from perspect.reranker.comparator import Comparator

    a_side, b_side = [], []
    for p in load_pairs(args.data, "train"):
        if p.claim_a not in a_side and len(a_side) < args.n:
            a_side.append(p.claim_a)
        if p.claim_b not in b_side and len(b_side) < args.n:
            b_side.append(p.claim_b)
    a, b = articles(a_side, b_side)
    load_ms, (cmp, enc) = harness.timed(
        lambda: (Comparator.load(args.model or paths.comparator_model()), encoder())
    )
    compare_articles(a, b, cmp, enc)  # warm-up (first calls allocate)
    took, res = harness.timed(lambda: compare_articles(a, b, cmp, enc))
    sample = [(a.sentences[i], b.sentences[i]) for i in range(min(len(a.sentences), 128))]
    rate = len(sample) / (harness.timed(lambda: cmp.compare(sample))[0] / 1000)
    full = len(a.sentences) * len(b.sentences)
    print(f"articles: A {len(a.sentences)} sentences, B {len(b.sentences)} sentences")
    print(f"models loaded in {load_ms / 1000:.1f} s (comparator + sentence encoder)")
    print(
        f"compare (prefilter + comparator): {took / 1000:.2f} s for {res.candidates} candidate "
        f"pairs; agreement {sum(x.relation == 'strengthens' for x in res.links)}, "
        f"dispute {sum(x.relation == 'weakens' for x in res.links)}"
    )
    print(
        f"without the prefilter: {full:,} pairs at {rate:.0f} pairs/s = {full / rate:.0f} s "
        "(estimated)"
    )
    return 0


def cost_args(p) -> None:
    model_args(p)
    p.add_argument(
        "--data", type=Path, default=harness.ROOT / "data" / "claimdiff", help="ClaimDiff's folder"
    )
    p.add_argument("--n", type=int, default=200, help="sentences an article")


# ---- cases -------------------------------------------------------------------------------------


def score_case(case: dict, comparator, enc, stance=None) -> Counter:
    """One case's gold pairs: found, missed, linked to the wrong sentence or on the wrong side."""
    from perspect.pipeline.compare import compare_articles

    gold_pairs = case["pairs"]
    titles = (f"{case['name']} (A)", f"{case['name']} (B)")
    a, b = articles([p[0] for p in gold_pairs], [p[1] for p in gold_pairs], titles)
    if len(a.sentences) != len(gold_pairs) or len(b.sentences) != len(gold_pairs):
        raise SystemExit(f"{case['name']}: the sentence splitter did not keep one fact a sentence")
    res = compare_articles(a, b, comparator, enc, stance=stance)
    link = {x.a: x for x in res.links}
    out: Counter = Counter()
    for i, (_, _, gold) in enumerate(gold_pairs):
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


def cases(args) -> int:
    """Disputes and agreements `perspect compare` finds in hand-written article pairs."""
    from perspect.core import paths
    from perspect.reranker import stance_trunk
    from perspect.reranker.comparator import Comparator

    if args.no_comparator and args.no_stance:
        raise SystemExit("error: --no-comparator and --no-stance leave nothing to compare with")
    # --no-comparator: the trunk alone (what compare would read without the comparator entry)
    cmp = None if args.no_comparator else Comparator.open(args.model or paths.comparator_model())
    enc = encoder()
    folder = None if args.no_stance else (args.trunk or stance_trunk.bundled())
    stance = stance_trunk.StanceTrunk.load(folder, serving=True) if folder else None
    print(f"stance trunk: {folder or 'none (the comparator alone)'}\n")
    total: Counter = Counter()
    first: Counter = Counter()  # the three cases of issue 33 (the earlier table)
    rows = []

    def row(name: str, c: Counter) -> list:
        found = f"{c['dispute_found']}/{c['gold_dispute']}", f"{c['agree_found']}/{c['gold_agree']}"
        return [name, *found, c["dispute_as_agreement"]]

    for case in json.loads(CASES.read_text())["cases"]:
        c = score_case(case, cmp, enc, stance)
        total += c
        if "kind" not in case:
            first += c
        rows.append(row(case["name"], c))
    rows += [row("all", total), row("first three", first)]
    heads = ["case", "disputes found", "agreements found", "dispute->agree"]
    print(harness.table(heads, rows))
    print("\nother outcomes:", {k: v for k, v in sorted(total.items()) if not k.startswith("gold")})
    return 0


def cases_args(p) -> None:
    trunk_args(p)
    p.add_argument(
        "--no-stance", action="store_true", help="the comparator alone (no stance trunk disputes)"
    )
    p.add_argument(
        "--no-comparator", action="store_true", help="the trunk alone (no comparator entry)"
    )


# ---- pairs -------------------------------------------------------------------------------------


def read_pairs(pairs: list[dict], reader, relation) -> list[str]:
    """Each pair as `compare` reads two aligned sentences: agree, dispute or none."""
    from perspect.pipeline.compare import CompareConfig, judge_pairs, same_claim

    a = [p["a"] for p in pairs]
    b = [p["b"] for p in pairs]
    idx = [(k, k) for k in range(len(pairs))]
    judged = judge_pairs(a, b, idx, relation, CompareConfig(), reader)
    return [
        "agree" if same_claim(x, y) else READ[None if got is None else got[0]]
        for x, y, got in zip(a, b, judged, strict=True)
    ]


def pairs(args) -> int:
    """How often `perspect compare` reads two hand-written sentences as their judge did."""
    from perspect.core import paths
    from perspect.reranker import stance_trunk
    from perspect.reranker.comparator import Comparator

    reader = None
    if not args.relation_only:
        reader = Comparator.open(args.model or paths.comparator_model())
        if not reader.reads_inference:
            raise SystemExit(f"{args.model}: this comparator has no inference head")
    trunk = args.trunk or stance_trunk.bundled()
    relation = stance_trunk.StanceTrunk.load(trunk, serving=True)
    items = json.loads(PAIRS.read_text())["pairs"]
    got = read_pairs(items, reader, relation)
    print(f"reader: {'the trunk' if reader is None else args.model or 'bundle'}, trunk: {trunk}")
    kinds = ("agree", "dispute", "none")
    for name in [*sorted({p["set"] for p in items}), "all"]:
        rows = [(p, g) for p, g in zip(items, got, strict=True) if name in ("all", p["set"])]
        seen = Counter((p["gold"], g) for p, g in rows)
        right = sum(v for (gold, g), v in seen.items() if gold == g)
        print(f"\n{name}: {right}/{len(rows)} right\n")
        cells = [[gold, *(seen[(gold, g)] for g in kinds)] for gold in kinds]
        print(harness.table(["gold \\ read", *kinds], cells))
    print("\nmisses:")
    for p, g in zip(items, got, strict=True):
        if g != p["gold"]:
            print(f"  [{p['set']}] gold {p['gold']}, read {g}: {p['a']} || {p['b']}")
    return 0


def pairs_args(p) -> None:
    trunk_args(p)
    p.add_argument("--relation-only", action="store_true", help="the trunk's inference, no reader")


def main(argv=None) -> int:
    return harness.commands(
        __doc__,
        {
            "cost": (cost, (), cost_args),
            "cases": (cases, (), cases_args),
            "pairs": (pairs, (), pairs_args),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
