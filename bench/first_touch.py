"""What first-touch lower states cost a search (issue 62, item 3): an index whose version stores
every perspective's states (built with `--stance-states`, as every build did before) beside one
that stores none (the default now: a search computes those it needs once and keeps them), in one
process, taking turns claim by claim (the order alternates: the trunk keeps a claim's own lower
states for whichever engine asks second).

    python bench/first_touch.py --stored HOME_A --touched HOME_B [--index default]
                                [--limit 20] [--set dev|reader|both] [--fill]
    python bench/first_touch.py --filled HOME [--index default] [--limit 15]

`--filled`: the index as a long-lived process leaves it once idle. Its caches are kept; the idle
fill (`Engine.fill_idle`: every perspective's lower states, then the judgments of its shown links)
runs to its end first (timed; nothing left to do on an index filled before), then each claim is
searched for the first time in this process, and again.

Each home's index is copied to a scratch folder without its caches (`lower_states.sqlite`,
`argument_judgments.sqlite`), so both start as a fresh build would. Each claim is searched once
(its first search) and again (searched before). Prints p50 / p95 / max of each, and the lower
layers' texts computed per first search.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CACHES = ("lower_states.sqlite", "argument_judgments.sqlite")


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def claims_of(which: str, limit: int, data: Path) -> list[str]:
    out: list[str] = []
    if which in ("dev", "both"):
        from perspect.core.datasets.perspectrum import load_claims

        if (data / "perspectrum_with_answers_v1.0.json").is_file():
            dev = sorted(load_claims(data, "dev"), key=lambda c: c.cid)
            out += [c.text for c in dev[:limit]]
        else:
            print(f"note: no PERSPECTRUM at {data}: dev claims skipped")
    if which in ("reader", "both"):
        from bench.reader import ARGUMENT_CLAIMS

        out += list(ARGUMENT_CLAIMS[:limit])
    return out


def scratch(home: Path, name: str, into: Path) -> Path:
    dest = into / home.name
    shutil.copytree(home / name, dest / name, symlinks=True)
    for f in CACHES:
        (dest / name / f).unlink(missing_ok=True)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stored", type=Path, help="home of an index with states")
    ap.add_argument("--touched", type=Path, help="home of one without")
    ap.add_argument("--filled", type=Path, help="home of an index to fill, then search")
    ap.add_argument("--index", default="default")
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--set", choices=("dev", "reader", "both"), default="both")
    ap.add_argument("--fill", action="store_true", help="then time the idle fill of the rest")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "perspectrum")
    a = ap.parse_args()
    from perspect.api import Perspect

    claims = claims_of(a.set, a.limit, a.data)
    if a.filled is not None:
        return filled(Perspect.open(a.index, home=a.filled), claims, a.set)
    if a.stored is None or a.touched is None:
        ap.error("give --stored and --touched, or --filled")
    with tempfile.TemporaryDirectory(prefix="first-touch-") as tmp:
        homes = {
            "stored": scratch(a.stored, a.index, Path(tmp) / "a"),
            "first touch": scratch(a.touched, a.index, Path(tmp) / "b"),
        }
        engines = {k: Perspect.open(a.index, home=h) for k, h in homes.items()}
        for p in engines.values():
            p.search("Zoos should be closed, says the warm-up.")
        stored_states = engines["stored"]._searcher.stance_states()
        if stored_states is None:
            print(f"error: {a.stored / a.index} stores no states (build it with --stance-states)")
            return 2
        if engines["first touch"]._searcher.stance_states() is not None:
            print(f"error: {a.touched / a.index} stores states: not a first-touch index")
            return 2
        first: dict[str, list[float]] = {k: [] for k in engines}
        again: dict[str, list[float]] = {k: [] for k in engines}
        computed: list[int] = []
        for n, claim in enumerate(claims):
            order = list(engines) if n % 2 == 0 else list(engines)[::-1]
            for name in order:
                p = engines[name]
                lower = p.engine().stance.lower
                before = lower.computed
                t0 = time.perf_counter()
                p.search(claim)
                first[name].append(1000 * (time.perf_counter() - t0))
                if name == "first touch":
                    computed.append(lower.computed - before)
            for name in order:
                t0 = time.perf_counter()
                engines[name].search(claim)
                again[name].append(1000 * (time.perf_counter() - t0))
        print(f"{len(claims)} claims ({a.set}), one process, warm, one search at a time")
        print(f"{'index':<14}{'first p50':>10}{'p95':>8}{'max':>8}{'again p50':>11}{'p95':>8}")
        for name in engines:
            f, g = first[name], again[name]
            print(
                f"{name:<14}{statistics.median(f):>10.0f}{pct(f, 0.95):>8.0f}{max(f):>8.0f}"
                f"{statistics.median(g):>11.0f}{pct(g, 0.95):>8.0f}"
            )
        print(
            f"first touch: lower layers run on a median of {statistics.median(computed):.0f} "
            f"texts a first search (max {max(computed)}); kept with the index after the run: "
            f"{engines['first touch'].engine().stance.lower.kept.count():,}"
        )
        if a.fill:  # the idle fill of a long-lived process, timed, then the claims once more
            import threading

            t0 = time.perf_counter()
            n = engines["first touch"].engine().fill_idle(threading.Event())
            took = time.perf_counter() - t0
            print(f"idle fill: {n:,} perspectives' states kept in {took:.0f} s ({n / took:.1f}/s)")
        for p in engines.values():
            p.close()
    return 0


def filled(p, claims: list[str], which: str) -> int:
    """First and second searches of `claims` on an index the idle fill has run over."""
    import threading

    p.search("Zoos should be closed, says the warm-up.")
    engine = p.engine()
    t0 = time.perf_counter()
    n = engine.fill_idle(threading.Event())
    print(f"idle fill: {n:,} texts and pairs computed in {time.perf_counter() - t0:.0f} s")
    lower = engine.stance.lower
    first, again, stages = [], [], {}
    made = lower.computed
    for claim in claims:
        t0 = time.perf_counter()
        res = p.search(claim)
        first.append(1000 * (time.perf_counter() - t0))
        for k, v in res.timings_ms.items():
            stages.setdefault(k, []).append(v)
        t0 = time.perf_counter()
        p.search(claim)
        again.append(1000 * (time.perf_counter() - t0))
    print(f"{len(claims)} claims ({which}), one process, warm, one search at a time, filled index")
    print(f"first search p50 {statistics.median(first):.0f} p95 {pct(first, 0.95):.0f} "
          f"max {max(first):.0f} ms; again p50 {statistics.median(again):.0f} "
          f"p95 {pct(again, 0.95):.0f} ms")  # fmt: skip
    for k, v in stages.items():
        print(f"  {k:<18} p50 {statistics.median(v):>6.0f} p95 {pct(v, 0.95):>6.0f} ms")
    print(f"lower layers run on {lower.computed - made} texts besides the claims themselves")
    p.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
