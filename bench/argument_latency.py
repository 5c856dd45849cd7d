"""What the argument model costs a search: the default engine beside the same engine without it
(`EngineConfig(argument=False)`, as before issue 55), in one process, taking turns claim by claim.

    python bench/argument_latency.py [--index default] [--home DIR] [--limit 30] [--set dev|reader]

Warm (each engine answers one claim first), one search at a time. Claims: PERSPECTRUM dev (the
first `--limit` by id) or the reader bench's argument set (claims written for it). Prints p50 /
p95 / max of each and the per-stage p50 of the default engine, where the argument model's stages
are (relevance+stance: the neither pass; evidence: the sentence judgments; pool reasons).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--set", choices=("dev", "reader"), default="dev")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "perspectrum")
    a = ap.parse_args()
    from perspect.api import Perspect
    from perspect.pipeline.engine import EngineConfig

    if a.set == "dev":
        if not (a.data / "perspectrum_with_answers_v1.0.json").is_file():
            print(f"skipped: no PERSPECTRUM at {a.data}")
            return 0
        from perspect.core.datasets.perspectrum import load_claims

        claims = [c.text for c in sorted(load_claims(a.data, "dev"), key=lambda c: c.cid)]
    else:
        from bench.reader import ARGUMENT_CLAIMS as claims
    claims = claims[: a.limit]
    engines = {
        "argument": Perspect.open(a.index, home=a.home),
        "without": Perspect.open(a.index, home=a.home, config=EngineConfig(argument=False)),
    }
    for p in engines.values():
        p.search(claims[0])  # warm: models loaded, graphs opened
    took: dict[str, list[float]] = {k: [] for k in engines}
    stages: dict[str, list[float]] = {}
    for claim in claims:
        for name, p in engines.items():
            t0 = time.perf_counter()
            res = p.search(claim)
            took[name].append((time.perf_counter() - t0) * 1000)
            if name == "argument":
                for s, ms in res.timings_ms.items():
                    stages.setdefault(s, []).append(ms)
    print(f"{len(claims)} {a.set} claims, index {a.index!r}, warm, one search at a time (ms)")
    print(f"{'engine':<26}{'p50':>8}{'p95':>8}{'max':>8}")
    for name, xs in took.items():
        label = "default (argument model)" if name == "argument" else "argument=False (before)"
        print(f"{label:<26}{statistics.median(xs):>8.0f}{pct(xs, 0.95):>8.0f}{max(xs):>8.0f}")
    print("default engine, stage p50: " + ", ".join(
        f"{s} {statistics.median(v):.0f}" for s, v in stages.items()))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
