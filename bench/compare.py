"""How long `perspect compare` takes for two 200-sentence articles, and what the prefilter saves.

The articles are ClaimDiff train sentences: A = the A-side claims of some topics, B = the B-side
claims of the same topics (so related pairs exist), 200 sentences each. Prints the time with the
models loaded (the comparison itself), the model loading, and the cross-encoder's rate, beside the
time all 40,000 pairs would take without the prefilter (estimated from that rate).

    python bench/compare.py [--data data/claimdiff] [--model models/comparator] [--n 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/claimdiff")
    ap.add_argument("--model", default=None)
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()

    from perspect.core import paths
    from perspect.core.datasets.claimdiff import load_pairs
    from perspect.core.model import bundle
    from perspect.pipeline.compare import Article, SentenceEncoder, compare_articles
    from perspect.reranker.comparator import Comparator

    pairs = load_pairs(args.data, "train")
    a_side, b_side = [], []
    for p in pairs:
        if p.claim_a not in a_side and len(a_side) < args.n:
            a_side.append(p.claim_a)
        if p.claim_b not in b_side and len(b_side) < args.n:
            b_side.append(p.claim_b)
    with tempfile.TemporaryDirectory() as tmp:
        fa, fb = Path(tmp) / "a.md", Path(tmp) / "b.md"
        fa.write_text("# Article A\n" + "\n\n".join(a_side))
        fb.write_text("# Article B\n" + "\n\n".join(b_side))
        a, b = Article.read(fa), Article.read(fb)
    t0 = time.perf_counter()
    cmp = Comparator.load(args.model or paths.comparator_model())
    dense = paths.dense_model_dir()
    enc = SentenceEncoder(
        bundle.resolve(dense) if bundle.is_bundle(dense) else paths.resolve_base(None)
    )
    load_s = time.perf_counter() - t0
    compare_articles(a, b, cmp, enc)  # warm-up (first calls allocate)
    t1 = time.perf_counter()
    res = compare_articles(a, b, cmp, enc)
    took = time.perf_counter() - t1
    t2 = time.perf_counter()
    sample = [(a.sentences[i], b.sentences[i]) for i in range(min(len(a.sentences), 128))]
    cmp.compare(sample)
    rate = len(sample) / (time.perf_counter() - t2)
    full = len(a.sentences) * len(b.sentences)
    print(f"articles: A {len(a.sentences)} sentences, B {len(b.sentences)} sentences")
    print(f"models loaded in {load_s:.1f} s (comparator + sentence encoder)")
    print(
        f"compare (prefilter + comparator): {took:.2f} s for {res.candidates} candidate pairs; "
        f"agreement {sum(x.relation == 'strengthens' for x in res.links)}, "
        f"dispute {sum(x.relation == 'weakens' for x in res.links)}"
    )
    print(
        f"without the prefilter: {full:,} pairs at {rate:.0f} pairs/s = {full / rate:.0f} s "
        "(estimated)"
    )


if __name__ == "__main__":
    main()
