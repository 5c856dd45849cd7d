"""BM25 benchmark on PERSPECTRUM: build throughput, index size, query latency, T1 IR baseline.

    python bench/bm25.py [--data ../shared/data/perspectrum] [--kmax 50]

Prints, for the perspective pool (11,112) and the evidence pool: build time, items/s, on-disk size,
queries/s and p50/p95 latency (warm, one query at a time, through the public `Perspect` API); and
the PERSPECTRUM T1 IR baseline on the dev split (section 5.2: per-claim precision of the returned
perspectives and recall over gold clusters, averaged over claims, F1 of the averages), with the
top-k cut-off tuned on dev. Note: tuning k on the split it reports makes the dev F1 optimistic; the
chosen k is what a test evaluation would use.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect import Perspect  # noqa: E402
from perspect.core.datasets.fetch import evidence_pool_file  # noqa: E402
from perspect.core.datasets.metrics import claim_pr, macro  # noqa: E402
from perspect.core.datasets.perspectrum import load_claims, load_perspectives  # noqa: E402
from perspect.indexer.indexer import Indexer, Source  # noqa: E402


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def latency(p: Perspect, queries: list[str], pool: str, k: int) -> dict[str, float]:
    for q in queries[:20]:  # warm caches
        p.search(q, k=k, pool=pool)
    times = []
    t_all = time.perf_counter()
    for q in queries:
        t0 = time.perf_counter()
        p.search(q, k=k, pool=pool)
        times.append((time.perf_counter() - t0) * 1000)
    wall = time.perf_counter() - t_all
    return {"qps": len(queries) / wall, "p50": statistics.median(times), "p95": pct(times, 0.95)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--kmax", type=int, default=50)
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "perspective_pool_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {data} (pass --data DIR)")
        return 0
    evidence = evidence_pool_file(data)
    dev = load_claims(data, "dev")
    pool_text = load_perspectives(data)
    home = Path(tempfile.mkdtemp(prefix="perspect-bench-"))

    print(f"# BM25 (tantivy) on PERSPECTRUM — {os.cpu_count()} CPUs\n")
    print("| pool | items | build s | items/s | size MiB | queries | q/s | p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    claim_queries = [c.text for c in dev]
    evid_queries = [f"{c.text} {pool_text[cl.pids[0]]}" for c in dev for cl in c.clusters]
    for pool, path, queries, k in (
        ("perspectives", data / "perspective_pool_v1.0.json", claim_queries, 50),
        ("evidence", evidence, evid_queries, 60),
    ):
        if path is None:
            continue
        t0 = time.perf_counter()
        if pool == "perspectives":
            Indexer("bench", home=home).build([Source(pool, path)])
        else:  # incremental add of a new pool to the live index (copy-on-write)
            Indexer("bench", home=home).add([Source(pool, path)])
        build = time.perf_counter() - t0
        p = Perspect.open("bench", home=home)
        n = p.pools[pool]
        size = du(p._searcher.version / pool)
        lat = latency(p, queries, pool, k)
        print(
            f"| {pool} | {n:,} | {build:.2f} | {n / build:,.0f} | {size / 2**20:.1f} | "
            f"{len(queries)} (k={k}) | {lat['qps']:,.0f} | {lat['p50']:.2f} | {lat['p95']:.2f} |"
        )
    print("\n(perspectives: full build; evidence: `index add` of the pool to the live index)")

    p = Perspect.open("bench", home=home)
    ranked = {c.cid: [int(h.id) for h in p.search(c.text, k=args.kmax).hits] for c in dev}
    rows = []
    for k in range(1, args.kmax + 1):
        m = macro(claim_pr(ranked[c.cid][:k], [cl.pids for cl in c.clusters]) for c in dev)
        rows.append((k, m))
    best_k, _ = max(rows, key=lambda r: r[1].f1)
    print(
        f"\n# PERSPECTRUM T1 (perspective relevance), IR baseline, dev split ({len(dev)} claims)\n"
    )
    print("| top-k | precision | recall | F1 |")
    print("|---|---|---|---|")
    for k, m in rows:
        if k in (1, 3, 5, 10, 15, 20, 30, 50) or k == best_k:
            mark = " ← best on dev" if k == best_k else ""
            print(
                f"| {k} | {100 * m.precision:.1f} | {100 * m.recall:.1f} | {100 * m.f1:.1f}{mark} |"
            )
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS: {rss:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
