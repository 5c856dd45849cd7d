"""A first `perspect search` in a new process, as a user types it, beside the previous main.

    python bench/baseline.py --make /tmp/prev --commit main      # the checkout to compare with
    python bench/cold_start.py --baseline-tree /tmp/prev [--runs 5] [--index default]

Each round starts this checkout's command line and the baseline's, one after the other (the
order alternating), so a busy machine's noise falls on both alike; both go through
bench/baseline.py's boot, which costs each the same. Prints the wall time to the answer (process
start to exit) per checkout, and whether the two answered the same clusters. The models' graphs
and PLAID's kernels are made before the first round (`perspect models prepare`): what is timed is
a start on a machine where Perspect has run before, not a first install.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baseline

ROOT = Path(__file__).resolve().parent.parent
CLAIM = "Cities should ban cars from their centres"  # written for the bench, not in PERSPECTRUM


def once(tree: Path, argv: list[str]) -> tuple[float, str]:
    """One `perspect <argv>` of `tree` in a new process: (wall seconds, a hash of the clusters)."""
    t0 = time.perf_counter()
    r = baseline.run(tree, argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        raise RuntimeError(f"{tree}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
    clusters = json.dumps(json.loads(r.stdout)["clusters"], sort_keys=True)
    return wall, hashlib.sha256(clusters.encode()).hexdigest()[:12]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline-tree", required=True)
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=str(ROOT / "indexes"))
    ap.add_argument("--claim", default=CLAIM)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    argv = ["search", args.claim, "--index", args.index, "--json"]
    argv += ["--home", str(Path(args.home).resolve())]
    trees = {"this checkout": ROOT, "baseline": Path(args.baseline_tree).resolve()}
    walls: dict[str, list[float]] = {k: [] for k in trees}
    answers: dict[str, set[str]] = {k: set() for k in trees}
    try:
        for tree in trees.values():  # a first start of each, not timed: page cache, .pyc
            once(tree, argv)
        for r in range(args.runs):
            for name in list(trees)[:: 1 if r % 2 == 0 else -1]:
                wall, answer = once(trees[name], argv)
                walls[name].append(wall)
                answers[name].add(answer)
    except RuntimeError as e:
        print(f"cold start failed: {e}")
        return 2
    print(f"# cold `perspect search --json` ({args.runs} runs each, alternating): {args.claim!r}")
    for name, w in walls.items():
        print(
            f"{name:14s} median {statistics.median(w):.2f} s, min {min(w):.2f}, max {max(w):.2f}"
            f"  answer {','.join(sorted(answers[name]))}"
        )
    same = answers["this checkout"] == answers["baseline"]
    print("same clusters in every run" if same else "the answers differ")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
