"""Fuzz every input reader for a set time: the properties of tests/test_fuzz_readers.py, run far
longer than the test suite can afford.

    python bench/fuzz_readers.py [--seconds 600] [--readers json,csv,...] [--seed 1]

Why a bench as well as the tests: the suite gives each reader a few dozen examples so that it
stays fast; the bugs that a reader still hides need thousands. The contract is the same: each
input is read or refused with the product's `InputError`; any other exception is a failure.
Hypothesis generates the inputs (atheris is not a dependency), in rounds of examples until the
reader's time is spent, each round with its own seed so that no round repeats another. A failure
does not stop the run: it is counted, and the first of each kind (exception and where it was
raised) is printed with its input, to be kept as an `@example` in the tests. Exit 1 on any.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import HypothesisWarning  # noqa: E402

from tests import test_fuzz_readers as fz  # noqa: E402

warnings.filterwarnings("ignore", category=HypothesisWarning)  # the repr of a 200 kB input
warnings.filterwarnings("ignore", "To avoid breaking existing software", DeprecationWarning)


def _pool(fmt: str):
    return {"data": fz.FILES[fmt], "opts": fz.pool_opts}, functools.partial(fz.check_pool, fmt)


READERS = {
    "json": _pool("json"),  # PERSPECTRUM pools, JSON lists, {"data": [...]}
    "jsonl": _pool("jsonl"),
    "csv": _pool("csv"),
    "tsv": _pool("tsv"),
    "txt": _pool("txt"),
    "news": ({"data": fz.FILES["news"], "opts": fz.news_opts}, fz.check_news),
    "folder": (
        {"files": fz.folder_files, "pool": st.sampled_from(["news", "documents"])},
        fz.check_folder,
    ),
    "web": (
        {
            "feed": fz.FILES["feed"] | fz.FILES["html"],
            "ctype": st.sampled_from(fz.CTYPES),
            "page": fz.FILES["html"],
            "status": st.sampled_from([200, 404]),
        },
        fz.check_web,
    ),
    "article": ({"rec": fz.article_objects}, fz.check_article_object),
}


@dataclass
class Tally:
    examples: int = 0
    failures: int = 0
    rounds: int = 0
    slowest_s: float = 0.0
    kinds: dict[str, str] = field(default_factory=dict)  # "Type at file:line" -> first input


def _kind(e: BaseException) -> str:
    frame = traceback.extract_tb(e.__traceback__)[-1]
    return f"{type(e).__name__} at {Path(frame.filename).name}:{frame.lineno}: {str(e)[:120]}"


def fuzz(name: str, seconds: float, base_seed: int) -> Tally:
    """Run reader `name`'s property until `seconds` are spent; every exception it lets out is
    counted (the property itself accepts InputError), none stops the run."""
    strategies, check = READERS[name]
    tally = Tally()
    deadline = time.monotonic() + seconds

    def prop(**kw) -> None:
        if time.monotonic() > deadline:
            return  # the round's remaining examples: not run, not counted
        tally.examples += 1
        start = time.monotonic()
        try:
            check(**kw)
        except Exception as e:  # the bug this bench looks for
            tally.failures += 1
            kind = _kind(e)
            if kind not in tally.kinds:
                tally.kinds[kind] = repr(kw)
        tally.slowest_s = max(tally.slowest_s, time.monotonic() - start)

    per_round, started = 20, time.monotonic()
    while time.monotonic() < deadline:
        if tally.examples:  # a round of about 10 s: little generated after the deadline
            rate = tally.examples / (time.monotonic() - started)
            per_round = max(5, min(500, int(rate * min(10.0, deadline - time.monotonic()))))
        run = settings(
            max_examples=per_round,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )(given(**strategies)(prop))
        seed(base_seed * 100_003 + tally.rounds)(run)()
        tally.rounds += 1
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600.0, help="per reader (default 600)")
    ap.add_argument("--readers", default=",".join(READERS), help="comma-separated; default all")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--save", type=Path, help="write the first input of each failure here, in full")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.readers.split(",") if n.strip()]
    unknown = [n for n in names if n not in READERS]
    if unknown:
        ap.error(f"unknown reader(s) {', '.join(unknown)}; one of {', '.join(READERS)}")
    command = shlex.join([sys.executable, "bench/fuzz_readers.py", *(argv or sys.argv[1:])])
    print(f"command: {command}")
    print(f"{'reader':8} {'examples':>9} {'failures':>9} {'slowest s':>10}  repeat with")
    total = 0
    for name in names:
        t = fuzz(name, args.seconds, args.seed)
        total += t.failures
        again = f"--readers {name} --seconds {args.seconds:g} --seed {args.seed}"
        print(f"{name:8} {t.examples:9,} {t.failures:9,} {t.slowest_s:10.2f}  {again}", flush=True)
        for kind, example in t.kinds.items():
            print(f"    {kind}\n      first input: {example[:400]}")
            if args.save:
                with args.save.open("a", encoding="utf-8") as out:
                    out.write(f"# {name}: {kind}\n{example}\n")
    print(f"failures: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
