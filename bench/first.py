"""First searches: a new `perspect search` process, first touches of an index, a pool of hundreds.

    python -m bench harness --make /tmp/prev --commit main      # the checkout to compare with
    python -m bench first cold [--baseline-tree /tmp/prev] [--runs 5] [--index default] [--claim C]
    python -m bench first touch --stored HOME_A --touched HOME_B [--index default]
                                [--limit 20] [--set dev|reader|both] [--fill]
    python -m bench first touch --filled HOME [--index default] [--limit 15]
    python -m bench first pool [--claims 30] [--home indexes] [--baseline-tree DIR] [--limit 30]

`cold`: each round starts this checkout's command line and the baseline's, one after the other
(the order alternating), so a busy machine's noise falls on both alike; both go through the
harness's boot (`harness.run_tree`), which costs each the same. Wall time to the answer (process
start to exit) and whether the two answered the same clusters. The models' graphs and PLAID's
kernels are made before (`perspect models prepare`; one untimed start of each): what is timed is a
start on a machine where Perspect has run before, not a first install.

`touch` (issue 62, item 3): what first-touch lower states cost a search. An index whose version
stores every perspective's states (built with `--stance-states`, as every build did before) beside
one that stores none (the default now: a search computes those it needs once and keeps them), in
one process, taking turns claim by claim (the order alternates: the trunk keeps a claim's own
lower states for whichever engine asks second). Each home's index is copied to a scratch folder
without its caches, so both start as a fresh build would; each claim is searched once (its first
search) and again (searched before). `--filled`: the index as a long-lived process leaves it once
idle: its caches kept, the idle fill (`Engine.fill_idle`: every perspective's lower states, then
the judgments of its shown links) run to its end first (timed), then each claim searched for the
first time in this process, and again.

`pool`: whole-search latency where every candidate is relevant and many are phrasings of one point
(issue 42: on a user's pool of 7,000 crowd-written arguments, ~230 a topic, a search took p50
4.3 s, p95 5.9 s). The pool (index `pool`, built once into `--home`): for each of the first
`--claims` PERSPECTRUM dev claims (file order, as the index was always built), every gold
perspective in 16 wordings (itself, 12 openings "In my view, ...", 3 closings "... That is the
point."), BM25 + dense + ColBERT and the stance states, as `make demo` builds `default`. Each
claim is searched by this checkout's engine (default and `--fast`) and, with `--baseline-tree`, by
that tree's default engine in its own process.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness

CLAIM = "Cities should ban cars from their centres"  # written for the benches, not in PERSPECTRUM
WARM_UP = "Zoos should be closed, says the warm-up."  # not a claim of any set: no first search
CACHES = ("lower_states.sqlite", "argument_judgments.sqlite")  # what a search keeps with an index


def home_of(args) -> Path:
    """The indexes' home, absolute (another checkout's process runs in its own folder)."""
    return Path(args.home or harness.ROOT / "indexes").resolve()


def worker_turn(worker: harness.Worker) -> tuple[Callable[[str], dict], list[float]]:
    """A runner asking `worker` for a search, and the list of the times the worker took in its
    own process (no pipe in them): what its row shows, in place of the round trip."""
    own: list[float] = []

    def ask(claim: str) -> dict:
        got = worker.ask(claim)
        own.append(got["ms"])
        return got

    return ask, own


# ---- cold: a new process ------------------------------------------------------------------------


def once(tree: Path, argv: list[str]) -> str:
    """One `perspect <argv>` of `tree` in a new process: a hash of the clusters it answered."""
    r = harness.run_tree(tree, argv, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{tree}: exit {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
    clusters = json.dumps(json.loads(r.stdout)["clusters"], sort_keys=True)
    return hashlib.sha256(clusters.encode()).hexdigest()[:12]


def cold_starts(starts: dict[str, tuple[Path, list[str]]], runs: int, warm: bool = True):
    """`runs` new processes per name ((tree, argv)), taking turns, the order alternating; `warm`:
    one untimed start of each first (page cache, .pyc). Returns (ms, answer hashes) per name;
    raises RuntimeError when a start fails."""
    answers: dict[str, set[str]] = {name: set() for name in starts}
    runners = {name: (lambda _, t=t, v=v: once(t, v)) for name, (t, v) in starts.items()}
    ms = harness.taking_turns(
        runners, [str(r) for r in range(runs)], warm, lambda n, _, __, h: answers[n].add(h)
    )
    return ms, answers


def cold_table(ms: dict[str, list[float]], answers: dict[str, set[str]]) -> str:
    rows = []
    for name, xs in ms.items():
        secs = (f"{f(xs) / 1000:.2f}" for f in (statistics.median, min, max))
        rows.append([name, *secs, len(xs), ",".join(sorted(answers[name]))])
    return harness.table(["", "median s", "min s", "max s", "runs", "answer"], rows)


def cold(a) -> int:
    """A first `perspect search` in a new process: wall time to the answer, beside a baseline."""
    argv = ["search", a.claim, "--index", a.index, "--json", "--home", str(home_of(a))]
    starts = {"this checkout": (harness.ROOT, argv)}
    if a.baseline_tree:
        starts["baseline"] = (a.baseline_tree.resolve(), argv)
    try:
        ms, answers = cold_starts(starts, a.runs)
    except RuntimeError as e:
        print(f"cold start failed: {e}")
        return 2
    print(f"# cold `perspect search --json` ({a.runs} runs each, alternating): {a.claim!r}\n")
    print(cold_table(ms, answers))
    harness.write_json(a.json, {n: harness.Timing.of(xs) for n, xs in ms.items()})
    if not a.baseline_tree:
        return 0
    same = answers["this checkout"] == answers["baseline"]
    print("same clusters in every run" if same else "the answers differ")
    return 0 if same else 1


def cold_args(p) -> None:
    p.add_argument("--claim", default=CLAIM)
    p.add_argument("--runs", type=int, default=5, help="timed starts of each checkout")


# ---- touch: first-touch lower states -----------------------------------------------------------


def scratch(home: Path, name: str, into: Path) -> Path:
    """A copy of `home`'s index `name` without the caches a search keeps: as a fresh build."""
    import shutil

    dest = into / home.name
    shutil.copytree(home / name, dest / name, symlinks=True)
    for f in CACHES:
        (dest / name / f).unlink(missing_ok=True)
    return dest


def touch(a) -> int:
    """What first-touch lower states cost a search: stored states beside none, or a filled index."""
    from perspect.api import Perspect

    sets = {"dev": "dev", "reader": "reader", "both": "dev+reader"}
    claims = harness.claims(sets[a.set], a.limit, a.data)
    if not claims:
        return 0
    if a.filled is not None:
        return filled(Perspect.open(a.index, home=a.filled), claims, a.set)
    if a.stored is None or a.touched is None:
        raise SystemExit("error: give --stored and --touched, or --filled")
    with tempfile.TemporaryDirectory(prefix="first-touch-") as tmp:
        homes = {
            "stored": scratch(a.stored, a.index, Path(tmp) / "a"),
            "first touch": scratch(a.touched, a.index, Path(tmp) / "b"),
        }
        engines = {k: Perspect.open(a.index, home=h) for k, h in homes.items()}
        for p in engines.values():
            p.search(WARM_UP)
        if engines["stored"]._searcher.stance_states() is None:
            print(f"error: {a.stored / a.index} stores no states (build it with --stance-states)")
            return 2
        if engines["first touch"]._searcher.stance_states() is not None:
            print(f"error: {a.touched / a.index} stores states: not a first-touch index")
            return 2
        first: dict[str, list[float]] = {k: [] for k in engines}
        again: dict[str, list[float]] = {k: [] for k in engines}
        computed: list[int] = []

        def searches(name: str) -> Callable[[str], None]:
            p = engines[name]
            lower = p.engine().stance.lower

            def run(claim: str) -> None:  # its first search, then again
                before = lower.computed
                first[name].append(harness.timed(lambda: p.search(claim))[0])
                if name == "first touch":
                    computed.append(lower.computed - before)
                again[name].append(harness.timed(lambda: p.search(claim))[0])

            return run

        harness.taking_turns({k: searches(k) for k in engines}, claims, warm=False)
        print(f"{len(claims)} claims ({a.set}), one process, warm, one search at a time\n")
        rows = []
        for name in engines:
            f, g = harness.Timing.of(first[name]), harness.Timing.of(again[name])
            rows.append([name, *(f"{x:,.0f}" for x in (f.p50, f.p95, f.max, g.p50, g.p95))])
        print(harness.table(["index", "first p50", "p95", "max", "again p50", "p95"], rows))
        print(
            f"\nfirst touch: lower layers run on a median of {statistics.median(computed):.0f} "
            f"texts a first search (max {max(computed)}); kept with the index after the run: "
            f"{engines['first touch'].engine().stance.lower.kept.count():,}"
        )
        if a.fill:  # the idle fill of a long-lived process, timed
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

    p.search(WARM_UP)
    engine = p.engine()
    took, n = harness.timed(lambda: engine.fill_idle(threading.Event()))
    print(f"idle fill: {n:,} texts and pairs computed in {took / 1000:.0f} s")
    lower = engine.stance.lower
    first, again, stages = [], [], {}
    made = lower.computed
    for claim in claims:
        ms, res = harness.timed(lambda c=claim: p.search(c))
        first.append(ms)
        for k, v in res.timings_ms.items():
            stages.setdefault(k, []).append(v)
        again.append(harness.timed(lambda c=claim: p.search(c))[0])
    print(
        f"{len(claims)} claims ({which}), one process, warm, one search at a time, filled index\n"
    )
    rows = [["first search", *harness.Timing.of(first).row()]]
    rows += [["again", *harness.Timing.of(again).row()]]
    rows += [[f"first search: {k}", *harness.Timing.of(v).row()] for k, v in stages.items()]
    print(harness.table(["", *harness.TIMING_HEADERS], rows))
    print(f"\nlower layers run on {lower.computed - made} texts besides the claims themselves")
    p.close()
    return 0


def touch_args(p) -> None:
    p.add_argument("--stored", type=Path, help="home of an index with states")
    p.add_argument("--touched", type=Path, help="home of one without")
    p.add_argument("--filled", type=Path, help="home of an index to fill, then search")
    p.add_argument("--set", choices=("dev", "reader", "both"), default="both")
    p.add_argument("--fill", action="store_true", help="then time the idle fill of the rest")
    p.set_defaults(limit=20)


# ---- pool: hundreds of relevant perspectives a claim -------------------------------------------

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


def build(home: Path, name: str, claims, data: Path) -> int:
    """Index `name` in `home`: the gold perspectives of `claims`, each in its 16 wordings."""
    from perspect.core.datasets.perspectrum import load_perspectives
    from perspect.indexer.indexer import Indexer, Source

    persp = load_perspectives(data)
    rows = [
        {"pId": f"{p}-{k}", "text": t, "source": "python -m bench first pool"}
        for c in claims
        for cl in c.clusters
        for p in cl.pids
        if p in persp
        for k, t in enumerate(wordings(persp[p]))
    ]
    src = home / f"{name}-pool.json"
    home.mkdir(parents=True, exist_ok=True)
    src.write_text(json.dumps(rows))
    took, _ = harness.timed(lambda: Indexer(name, home=home).build([Source("perspectives", src)]))
    print(f"built index {name}: {len(rows)} perspectives in {took / 1000:.0f} s")
    src.unlink()
    return len(rows)


def pool(a) -> int:
    """Whole-search latency on a pool with hundreds of relevant perspectives a claim."""
    if not harness.have_perspectrum(a.data):
        return 0
    from perspect import Perspect
    from perspect.core.datasets.perspectrum import load_claims
    from perspect.pipeline.engine import fast_config

    home = home_of(a)
    dev = load_claims(a.data, "dev")  # file order: the claims the pool index was built from
    if not (home / a.name / "CURRENT").is_file():
        build(home, a.name, dev[: a.claims], a.data)
    claims = [c.text for c in dev[: min(a.claims, a.limit)]]
    engines = {
        "engine": Perspect.open(a.name, home=home),
        "engine --fast": Perspect.open(a.name, home=home, config=fast_config()),
    }
    runners: dict[str, Callable] = {n: p.search for n, p in engines.items()}
    worker = label = None
    if a.baseline_tree:
        worker = harness.search_worker(a.baseline_tree, a.name, home)
        label = f"baseline {a.baseline_tree.name}"
        runners[label], own = worker_turn(worker)
    sizes: dict[str, list[int]] = {n: [] for n in runners}
    pairs: list[int] = []

    def seen(name, _claim, _ms, got) -> None:
        sizes[name].append(got["clusters"] if name == label else len(got.clusters))
        if name == "engine":
            last = engines[name].engine().clusters.last
            pairs.append(len(last.scored) if last else 0)

    ms = harness.taking_turns(runners, claims, seen=seen, alternate=False)
    if worker:
        ms[label] = own[-len(claims) :]
        worker.close()
    kept = engines["engine"]._searcher.pools.get("perspectives", 0)
    print(
        f"\n# Pool bench: index {a.name} ({kept} perspectives, ~{kept // max(1, a.claims)} "
        f"relevant a claim), {len(claims)} claims, warm, in turn\n"
    )
    print(harness.cost_table(ms, "engine"))
    per = ", ".join(f"{n} {statistics.fmean(s):.1f}" for n, s in sizes.items())
    print(f"clusters a claim: {per}")
    if pairs:
        print(
            f"equivalence pairs scored a search (engine): median {statistics.median(pairs):.0f}, "
            f"p95 {harness.pct(pairs, 0.95)}, max {max(pairs)}"
        )
    harness.write_json(a.json, {n: harness.Timing.of(xs) for n, xs in ms.items()})
    return 0


def pool_args(p) -> None:
    p.add_argument("--claims", type=int, default=30, help="dev claims whose perspectives make it")
    p.add_argument("--name", default="pool", help="the pool index's name in --home")


def main(argv: Sequence[str] | None = None) -> int:
    return harness.commands(
        __doc__,
        {
            "cold": (cold, ("index", "home", "json", "baseline-tree"), cold_args),
            "touch": (touch, ("index", "data", "limit"), touch_args),
            "pool": (pool, ("home", "data", "limit", "json", "baseline-tree"), pool_args),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
