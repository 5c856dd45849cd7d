"""A pool with a few hundred relevant perspectives per claim: whole-search latency where every
candidate is relevant and many are phrasings of one point (issue 42: on a user's pool of 7,000
crowd-written arguments, ~230 a topic, a search took p50 4.3 s, p95 5.9 s).

    python bench/pool.py [--claims 30] [--home indexes] [--baseline-tree DIR] [--limit 30]

The pool (index `pool`, built once into `--home`): for each of the first `--claims` PERSPECTRUM
dev claims, every gold perspective in 16 wordings (itself and 15 with an opening or closing
phrase: "In my view, ...", "... That is the point."), about 200 relevant perspectives a claim
and several thousand in all; BM25 + dense + ColBERT and the stance states, as `make demo` builds
`default`. Then each claim is searched by this checkout's engine (default and `--fast`) and, with
`--baseline-tree`, by that tree's default engine (bench/baseline.py), taking turns claim by claim.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import baseline  # noqa: E402

from perspect import Perspect  # noqa: E402
from perspect.core.datasets.perspectrum import load_claims, load_perspectives  # noqa: E402
from perspect.indexer.indexer import Indexer, Source  # noqa: E402
from perspect.pipeline.engine import fast_config  # noqa: E402

OPENINGS = (
    "In my view, ",
    "I believe that ",
    "It is clear that ",
    "Many people argue that ",
    "Some would say that ",
    "The point is that ",
    "Simply put, ",
    "Honestly, ",
    "As I see it, ",
    "We should remember that ",
    "Let us not forget that ",
    "Frankly, ",
)
CLOSINGS = (" That is the point.", " Think about it.", " This matters.")


def wordings(text: str) -> list[str]:
    body = text.strip()
    low = body[:1].lower() + body[1:]
    return [body, *(o + low for o in OPENINGS), *(body + c for c in CLOSINGS)]


def build(home: Path, name: str, n_claims: int, data: Path) -> int:
    claims = load_claims(data, "dev")[:n_claims]
    persp = load_perspectives(data)
    rows = []
    for c in claims:
        for cl in c.clusters:
            for p in cl.pids:
                if p in persp:
                    for k, t in enumerate(wordings(persp[p])):
                        rows.append({"pId": f"{p}-{k}", "text": t, "source": "bench/pool.py"})
    src = home / f"{name}-pool.json"
    home.mkdir(parents=True, exist_ok=True)
    src.write_text(json.dumps(rows))
    t0 = time.perf_counter()
    Indexer(name, home=home).build([Source("perspectives", src)])
    print(f"built index {name}: {len(rows)} perspectives in {time.perf_counter() - t0:.0f} s")
    src.unlink()
    return len(rows)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--claims", type=int, default=30, help="dev claims whose perspectives make the pool"
    )
    ap.add_argument("--limit", type=int, default=30, help="claims searched")
    ap.add_argument("--home", default=str(ROOT / "indexes"))
    ap.add_argument("--name", default="pool")
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--baseline-tree", default=None)
    args = ap.parse_args()
    data, home = Path(args.data), Path(args.home).resolve()
    if not (data / "dataset_split_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {data}")
        return 0
    if not (home / args.name / "CURRENT").is_file():
        build(home, args.name, args.claims, data)
    claims = [c.text for c in load_claims(data, "dev")[: min(args.claims, args.limit)]]
    engines = {
        "engine": Perspect.open(args.name, home=home),
        "engine --fast": Perspect.open(args.name, home=home, config=fast_config()),
    }
    worker = None
    if args.baseline_tree:
        worker = baseline.search_worker(Path(args.baseline_tree), args.name, str(home))
    label = f"baseline {Path(args.baseline_tree).name}" if worker else None
    for p in engines.values():
        p.search(claims[0])
    if worker:
        worker.ask(claims[0])
    names = [*engines, *([label] if worker else [])]
    times: dict[str, list[float]] = {n: [] for n in names}
    sizes: dict[str, list[int]] = {n: [] for n in names}
    passes: list[int] = []
    for c in claims:
        for n in names:
            if n in engines:
                t0 = time.perf_counter()
                r = engines[n].search(c)
                times[n].append((time.perf_counter() - t0) * 1000)
                sizes[n].append(len(r.clusters))
                if n == "engine":
                    last = engines[n].engine().clusters.last
                    passes.append(len(last.scored) if last else 0)
            else:
                got = worker.ask(c)
                times[n].append(got["ms"])
                sizes[n].append(got["clusters"])
    if worker:
        worker.close()
    kept = engines["engine"]._searcher.pools.get("perspectives", 0)
    print(
        f"\n# Pool bench: index {args.name} ({kept} perspectives, ~{kept // max(1, args.claims)} "
        f"relevant a claim), {len(claims)} claims, warm, taking turns\n"
    )
    print("| pipeline | p50 ms | p95 ms | max ms | clusters/claim |")
    print("|---|---|---|---|---|")
    for n in names:
        t = times[n]
        print(
            f"| {n} | {statistics.median(t):.0f} | {pct(t, 0.95):.0f} | {max(t):.0f} | "
            f"{statistics.mean(sizes[n]):.1f} |"
        )
    if passes:
        print(
            f"\nequivalence pairs scored a search (engine): median {statistics.median(passes):.0f}, "
            f"p95 {pct(passes, 0.95)}, max {max(passes)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
