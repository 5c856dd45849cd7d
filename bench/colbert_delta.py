"""ColBERT updates: PLAID plus an exact delta and tombstones, against a full rebuild, in one run.

    python bench/colbert_delta.py [--data DIR] [--colbert-model models/colbert] [--limit N]

The perspective pool is encoded once; a full PLAID build of every perspective is the reference.
Each variant builds PLAID over part of the pool and adds the rest as later writes would: new
documents to the exact delta, replaced ones as a tombstone in PLAID plus a delta copy. Scored
on PERSPECTRUM dev claims against their gold perspectives (recall@k), and by how much of the full
build's top 10 each variant returns (the same vectors throughout: only the index differs).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.core.datasets.perspectrum import load_claims, load_perspectives  # noqa: E402
from perspect.retriever.colbert import ColBERTBackend, default_model  # noqa: E402

KS = (10, 20, 60)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--colbert-model", default=str(default_model()))
    ap.add_argument("--limit", type=int, default=None, help="first N dev claims only")
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "perspective_pool_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM perspective pool in {data}")
        return 0
    P = load_perspectives(data)
    ids = [str(i) for i in P]
    texts = [P[i] for i in P]
    queries = []
    for c in load_claims(data, "dev")[: args.limit]:
        gold = {str(p) for cl in c.clusters for p in cl.pids if p in P}
        if gold:
            queries.append((c.text, gold))
    tmp = Path(tempfile.mkdtemp(prefix="perspect-colbert-delta-"))
    cfg = {"model": args.colbert_model, "min_plaid_docs": 1000}
    print(
        f"# ColBERT delta vs full rebuild: {len(ids):,} perspectives, {len(queries)} dev claims\n"
    )
    t0 = time.perf_counter()
    embs = ColBERTBackend.create(tmp / "enc", cfg).encode(texts, is_query=False)
    print(f"encoded in {time.perf_counter() - t0:.0f} s\n")
    vec = dict(zip(ids, embs, strict=True))
    rnd = random.Random(0)
    order = ids[:]
    rnd.shuffle(order)
    variants = [("full PLAID build (reference)", 0.0, 0.0)]
    for added, replaced in ((0.1, 0.0), (0.3, 0.0), (0.2, 0.1), (0.45, 0.0)):
        variants.append((f"PLAID {1 - added:.0%} + delta {added:.0%}, {replaced:.0%} replaced",
                         added, replaced))  # fmt: skip
    print("| index | " + " | ".join(f"R@{k}" for k in KS) + " | top-10 overlap | p50 ms |")
    print("|---|" + "---|" * (len(KS) + 2))
    reference: dict[str, list[str]] = {}
    for n, (name, added, replaced) in enumerate(variants):
        b = ColBERTBackend.create(tmp / f"v{n}", cfg)
        cut = int(len(order) * (1 - added))
        b.add_encoded(order[:cut], [vec[i] for i in order[:cut]])
        if added:
            b.add_encoded(order[cut:], [vec[i] for i in order[cut:]])
        if replaced:
            again = order[: int(len(order) * replaced)]
            b.add_encoded(again, [vec[i] for i in again])  # tombstone + delta copy
        b.commit()
        assert b.count() == len(ids)
        b.search(queries[0][0], 5)  # warm
        recalls = {k: [] for k in KS}
        overlap, times = [], []
        for q, gold in queries:
            t = time.perf_counter()
            got = [d for d, _ in b.search(q, max(KS))]
            times.append((time.perf_counter() - t) * 1000)
            for k in KS:
                recalls[k].append(len(gold & set(got[:k])) / len(gold))
            if n == 0:
                reference[q] = got[:10]
            overlap.append(len(set(reference[q]) & set(got[:10])) / 10)
        print(
            f"| {name} | "
            + " | ".join(f"{statistics.mean(recalls[k]):.3f}" for k in KS)
            + f" | {statistics.mean(overlap):.3f} | {statistics.median(times):.1f} |"
        )
        b.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
