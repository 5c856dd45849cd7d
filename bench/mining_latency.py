"""What mining costs a search (issue 45: "search p50 with mining <= 1.5x without"): the demo index
beside a copy of it with 1,000 articles added as documents, the same dev claims searched on
both, taking turns claim by claim.

    python bench/mining_latency.py [--index default] [--home indexes] [--articles 1000]
                                   [--name with-documents] [--limit 60]

The articles are PERSPECTRUM's evidence paragraphs as the `mining` step of `make models` makes
them (perspect.lab.mining_fit.evidence_articles: argumentative debate text, so many are mined:
the costly case), the first `--articles`; the copy (`--name`) is made through `Indexer.add`
only when missing, and its build time printed. Warm: both engines loaded, one search each first.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect import Perspect  # noqa: E402
from perspect.core.datasets.perspectrum import load_claims  # noqa: E402
from perspect.indexer.indexer import Indexer, Source  # noqa: E402
from perspect.lab.mining_fit import evidence_articles  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def prepare(home: Path, base: str, name: str, n: int, data: Path) -> None:
    if (home / name / "CURRENT").is_file():
        return
    shutil.copytree(home / base, home / name, symlinks=True)
    arts = evidence_articles(data)[:n]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "articles.jsonl"
        src.write_text("".join(json.dumps(a) + "\n" for a in arts))
        t0 = time.perf_counter()
        Indexer(name, home=home).add([Source("documents", src)])
    print(f"index {name}: {base} + {len(arts)} articles in {time.perf_counter() - t0:.0f} s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=str(ROOT / "indexes"))
    ap.add_argument("--name", default="with-documents")
    ap.add_argument("--articles", type=int, default=1000)
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    args = ap.parse_args()
    data, home = Path(args.data), Path(args.home).resolve()
    if not (data / "dataset_split_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {data}")
        return 0
    if not (home / args.index / "CURRENT").is_file():
        print(f"skip: no index {args.index} in {home}")
        return 0
    prepare(home, args.index, args.name, args.articles, data)
    claims = [c.text for c in load_claims(data, "dev")][: args.limit]
    engines = {
        f"without documents ({args.index})": Perspect.open(args.index, home=home),
        f"with mining ({args.name})": Perspect.open(args.name, home=home),
    }
    for p in engines.values():
        p.search(claims[0])
    times: dict[str, list[float]] = {n: [] for n in engines}
    mined: list[int] = []
    stage: list[float] = []
    for c in claims:
        for n, p in engines.items():
            t0 = time.perf_counter()
            r = p.search(c)
            times[n].append((time.perf_counter() - t0) * 1000)
            if n.startswith("with"):
                mined.append(sum(m.mined for cl in r.clusters for m in cl.members))
                stage.append(r.timings_ms.get("mining", 0.0))
    docs = engines[f"with mining ({args.name})"]._searcher.pools.get("documents", 0)
    print(
        f"\n# Mining latency: {len(claims)} dev claims, warm, taking turns; {args.name}: "
        f"{args.index} + {docs} document sentences\n"
    )
    print("| index | p50 ms | p95 ms | mean ms |")
    print("|---|---|---|---|")
    for n, t in times.items():
        print(
            f"| {n} | {statistics.median(t):.0f} | {pct(t, 0.95):.0f} | {statistics.mean(t):.0f} |"
        )
    a, b = (statistics.median(t) for t in times.values())
    print(
        f"\nwith / without at p50: {b / a:.2f}x; the mining stage p50 {statistics.median(stage):.0f}"
        f" ms, p95 {pct(stage, 0.95):.0f}; mined members shown a search: median "
        f"{statistics.median(mined):.0f}, max {max(mined)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
