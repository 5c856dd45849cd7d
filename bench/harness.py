"""The benches' one harness: what every bench shares, so each bench is a few functions over it.

- **Claim sets** (`claims`): PERSPECTRUM dev / tune claims, the claims written for the reader bench
  (`written`: none is a PERSPECTRUM claim, none tuned on), the web claims of the judged set, the
  documents set. Why here: four benches kept their own copies and their own "first N by id".
- **Timing** (`Timing`, `taking_turns`): p50 / p95 / max of warm searches; engines beside a named
  baseline answer the same claim one after the other, the order alternating claim by claim, so a
  busy machine's noise falls on all alike (sentence-transformers' evaluators share one loop the
  same way).
- **Another checkout beside this one** (`Worker`, `search_worker`, `run_tree`, `make_tree`): the
  previous main in its own process, importing its own code and bundle.
- **Output** (`table`, `write_json`): one Markdown table shape and one JSON writer.
- **Command lines** (`commands`): one parser shape, `python -m bench NAME SUB [ARGS]`, with the
  common options (`--index`, `--home`, `--data`, `--limit`, `--json`) spelled once.

    python -m bench harness --make DIR [--commit main]   # export a commit's tree for --baseline-tree
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
PERSPECTRUM = SHARED / "perspectrum"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# ---- claim sets --------------------------------------------------------------------------------

# written for this bench; none is a PERSPECTRUM claim (checked by --check)
CLAIMS = [
    "Smartphones should be banned in schools",
    "Social media companies should be regulated like tobacco companies",
    "Governments should stop funding crewed missions to Mars",
    "More nuclear power plants are needed",
    "Out of town shopping malls damage town centres",
    "Zoos should be closed",
    "Homework should be abolished in primary schools",
    "Self-driving cars should be allowed on public roads",
    "Tipping in restaurants should be abolished",
    "Animal testing should be banned",
    "The death penalty should be abolished",
    "Junk food advertising aimed at children should be banned",
    "Four-day working weeks should become the norm",
    "Governments should introduce a universal basic income",
    "Violent video games make children aggressive",
    "Genetically modified crops are safe to eat",
    "Cities should ban cars from their centres",
    "Plastic bags should be banned",
    "School uniforms should be compulsory",
    "Professional athletes are overpaid",
    "Hunting for sport should be illegal",
    "Cash should be phased out in favour of digital payments",
    "Vaccination should be mandatory for children",
    "Nuclear weapons make the world safer",
]

# issue 55's set: written for it, in words PERSPECTRUM does not use; the last six are on topics no
# curated perspective covers (what the argument model must place by itself)
ARGUMENT_CLAIMS = [
    "Pet owners should need a licence",
    "Town councils should stop mowing road verges to help wildlife",
    "Cosmetics tested on animals should not be sold",
    "Keeping orcas in aquariums is cruel",
    "Cheap flights should carry a carbon tax",
    "Teenagers should be allowed to vote at sixteen",
    "Exams are a poor measure of what pupils know",
    "Wealthy people should pay a higher share of their income in tax",
    "Smoking should be banned in all public outdoor places",
    "Rich countries should open their borders to more refugees",
    "Organ donation should be automatic unless people refuse",
    "Sugary drinks should carry a health tax",
    "Police officers should wear body cameras at all times",
    "Space agencies spend money better used on Earth",
    "Nuclear energy is the best way to cut carbon emissions",
    "Couples should be free to edit the DNA of their embryos",
    "Libraries should be open around the clock",
    "Employers should not be allowed to read staff emails",
    "Electric scooters should be banned from pavements",
    "Museums should return artefacts taken during colonial rule",
    "Supermarkets should be forced to donate unsold food",
    "Daylight saving time should be scrapped",
]
# on the two UKP topics no argument model row was trained on, for an index to which a reader added
# that topic's web pages as documents (the "documents" set: mined arguments and reasons from
# documents; bench/RESULTS.md, "Reasons from documents")
DOCUMENT_CLAIMS = [
    "Adults should be allowed to buy cannabis legally",
    "Legal marijuana would make roads more dangerous",
    "Cannabis should be available on prescription for chronic pain",
    "Governments should tax marijuana sales instead of jailing users",
    "The minimum wage should be raised to a living wage",
    "A higher minimum wage costs young people their jobs",
    "Small businesses cannot afford a higher minimum wage",
    "Employers should be free to set their own wages",
]
SETS = {"default": CLAIMS, "argument": ARGUMENT_CLAIMS, "documents": DOCUMENT_CLAIMS}


WRITTEN = CLAIMS + ARGUMENT_CLAIMS  # the 46 claims written for the reader bench


def have_perspectrum(data: Path = PERSPECTRUM) -> bool:
    """PERSPECTRUM is in `data`; else one line saying what is skipped (a machine without ../shared)."""
    if (Path(data) / "perspectrum_with_answers_v1.0.json").is_file():
        return True
    print(f"skip: no PERSPECTRUM in {data} (../shared/data is not on this machine)")
    return False


def claims(which: str, limit: int | None = None, data: Path = PERSPECTRUM) -> list[str]:
    """The claim texts of a named set, the first `limit` (PERSPECTRUM's by id, so two runs and two
    benches read the same ones): `dev`, `tune` (held-out train claims the models never fitted
    on), `written` (46), `reader` (the argument set's 22), `documents`, `web` (the judged set's
    internet claims, none tuned on), or `dev+written`. `dev-listed`: dev in its split file's own
    order, the first N of which the whole-search and mining cost figures were taken on (their
    scripts read it so before the harness; by id it is another set)."""
    if "+" in which:
        return [c for part in which.split("+") for c in claims(part, limit, data)]
    if which in ("dev", "dev-listed", "tune"):
        if not have_perspectrum(data):
            return []
        from perspect.core.datasets.perspectrum import load_claims, tune_claims_of

        if which == "dev":
            got = sorted(load_claims(data, "dev"), key=lambda c: c.cid)
        elif which == "dev-listed":
            got = load_claims(data, "dev")
        else:
            got = tune_claims_of(data)[0]
        return [c.text for c in got][:limit]
    if which == "web":
        from perspect.lab import judged

        got = [
            c.text for c in judged.load_claims() if c.split == "report" and c.source == "internet"
        ]
        return got[:limit]
    named = {"written": WRITTEN, "reader": ARGUMENT_CLAIMS, "documents": DOCUMENT_CLAIMS}
    if which not in named:
        raise SystemExit(
            f"error: no claim set {which!r} (dev, dev-listed, tune, written, reader, documents, web)"
        )
    return list(named[which])[:limit]


# ---- timing ------------------------------------------------------------------------------------


def pct(xs: Sequence[float], q: float) -> float:
    """The q-quantile by nearest rank (no interpolation: a p95 of 20 searches is a search)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))] if xs else float("nan")


@dataclass(frozen=True)
class Timing:
    """Milliseconds of n runs: what every cost table prints."""

    n: int
    p50: float
    p95: float
    max: float
    mean: float

    @classmethod
    def of(cls, ms: Sequence[float]) -> Timing:
        if not ms:
            return cls(0, float("nan"), float("nan"), float("nan"), float("nan"))
        return cls(len(ms), pct(ms, 0.5), pct(ms, 0.95), max(ms), statistics.fmean(ms))

    def row(self) -> list[str]:
        return [f"{self.p50:,.0f}", f"{self.p95:,.0f}", f"{self.max:,.0f}", str(self.n)]


TIMING_HEADERS = ["p50 ms", "p95 ms", "max ms", "n"]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(milliseconds, value) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def taking_turns(
    runners: dict[str, Callable[[str], Any]],
    items: Sequence[str],
    warm: bool = True,
    seen: Callable[[str, str, float, Any], None] | None = None,
    alternate: bool = True,
) -> dict[str, list[float]]:
    """Each runner on each item, the runners one after the other per item and their order
    alternating (reversed on odd items): the baseline and the candidate meet the same machine.
    `warm`: each runner answers the first item once, untimed, before anything is timed.
    `seen(name, item, ms, value)` is called after each run (answers kept, stages read).
    `alternate=False`: the first runner always first, for rows on one index that share what it
    keeps in the process (judged links, a claim's lower states): the first row is each claim's
    first search, the rows after it find that work done."""
    if warm and items:
        for fn in runners.values():
            fn(items[0])
    ms: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for i, item in enumerate(items):
        for name in names if i % 2 == 0 or not alternate else names[::-1]:
            took, value = timed(lambda n=name, x=item: runners[n](x))
            ms[name].append(took)
            if seen is not None:
                seen(name, item, took, value)
    return ms


def cost_table(ms: dict[str, list[float]], first: str = "") -> str:
    """One row per runner (p50 / p95 / max / n) and, beside the first (the baseline), p50 ratios."""
    base = Timing.of(ms[first or next(iter(ms))]).p50 if ms else float("nan")
    rows = []
    for name, xs in ms.items():
        t = Timing.of(xs)
        rows.append([name, *t.row(), f"{t.p50 / base:.2f}x" if base == base and base else ""])
    return table(["", *TIMING_HEADERS, "p50 / first"], rows)


# ---- output ------------------------------------------------------------------------------------


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table (what RESULTS.md holds), columns padded for a terminal too."""
    rows = [[str(x) for x in r] for r in rows]
    width = [max(len(str(h)), *(len(r[k]) for r in rows)) for k, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, width, strict=True)) + " |"

    return "\n".join([line(headers), line(["-" * w for w in width]), *map(line, rows)])


def write_json(path: str | Path | None, value: Any) -> None:
    """`value` (dataclasses as dicts) to `path`, when one is given; says where."""
    if not path:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    default = lambda x: asdict(x) if hasattr(x, "__dataclass_fields__") else str(x)  # noqa: E731
    path.write_text(json.dumps(value, indent=1, default=default) + "\n", encoding="utf-8")
    print(f"wrote {path}")


# ---- command lines -----------------------------------------------------------------------------

COMMON = {
    "index": dict(default="default", help="the index searched (default: default)"),
    "home": dict(type=Path, default=None, help="the indexes' home (default: the configured one)"),
    "data": dict(type=Path, default=PERSPECTRUM, help="PERSPECTRUM's folder (../shared/data)"),
    "limit": dict(type=int, default=30, help="claims per set (the first N)"),
    "json": dict(type=Path, default=None, help="also write the figures to this JSON file"),
    "baseline-tree": dict(
        type=Path,
        default=None,
        help="also time this checkout's engine (the previous main: python -m bench harness "
        "--make DIR), in its own process, taking turns claim by claim",
    ),
}

Command = Callable[[argparse.Namespace], int]


def commands(
    doc: str, subs: dict[str, tuple[Command, Sequence[str], Callable[[Any], None] | None]]
) -> Callable[[Sequence[str] | None], int]:
    """A bench's `main(argv)`: `NAME SUB [ARGS]` with, per SUB, its function, the COMMON options it
    takes and a function adding its own. The SUB's help is its function's first docstring line."""

    def main(argv: Sequence[str] | None = None) -> int:
        ap = argparse.ArgumentParser(
            description=doc.strip().splitlines()[0],
            epilog=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub = ap.add_subparsers(dest="cmd", required=True, metavar="|".join(subs))
        for name, (fn, common, more) in subs.items():
            first = (fn.__doc__ or "").strip().splitlines()
            p = sub.add_parser(name, help=first[0] if first else "", description=fn.__doc__)
            for opt in common:
                p.add_argument(f"--{opt}", **COMMON[opt])
            if more is not None:
                more(p)
        args = ap.parse_args(argv)
        return subs[args.cmd][0](args) or 0

    return main


# ---- a server beside the bench ----------------------------------------------------------------


def free_port() -> int:
    """A port nothing listens on now, for a `perspect serve` the bench starts."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(
    url: str, proc: subprocess.Popen, timeout: float = 600, log: Path | None = None
) -> float:
    """Seconds until the server at `url` answered GET /ready with 200; one line and exit when it
    exits first (`log`: its output, whose tail the line carries) or `timeout` passes."""
    import httpx

    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log is not None else ""
            raise SystemExit(f"perspect serve exited before it was ready at {url}: {tail}")
        try:
            if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"perspect serve did not get ready at {url} in {timeout:.0f} s")


# ---- another checkout beside this one ----------------------------------------------------------

# Imports Perspect from the tree in argv[1]: the editable install's finder maps `perspect.*` to
# this checkout's folders; here it is pointed at the tree's instead, before anything is imported.
BOOT = r"""
import importlib, json, os, sys
tree = sys.argv[1]
sys.path = [p for p in sys.path if p not in ("", os.getcwd())]  # no checkout from the cwd
for name in list(sys.modules):
    if name.startswith("__editable___perspect"):
        m = sys.modules[name]
        here = os.path.dirname(m.MAPPING["perspect"])
        m.MAPPING.update({k: v.replace(here, tree, 1) for k, v in m.MAPPING.items()})
sys.argv = sys.argv[1:]
exec(compile(sys.argv[1], "<baseline worker>", "exec"))
"""

SEARCH_WORKER = r"""
import json, sys, time
from perspect import Perspect
index, home = sys.argv[2], (sys.argv[3] or None)
p = Perspect.open(index, home=home)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    claim = json.loads(line)
    t0 = time.perf_counter()
    r = p.search(claim)
    ms = (time.perf_counter() - t0) * 1000
    print(json.dumps({"ms": ms, "clusters": len(r.clusters), "timings": dict(r.timings_ms)}), flush=True)
"""


def tree_env() -> dict[str, str]:
    """The worker's environment: this checkout's caches (materialised bases, PLAID's kernels)."""
    return {**os.environ, "PERSPECT_CACHE": os.environ.get("PERSPECT_CACHE", str(ROOT / ".cache"))}


class Worker:
    """A process running `code` with Perspect imported from `tree` (another checkout: its code,
    its bundle, this environment's packages); `ask` sends one JSON value, returns its answer."""

    def __init__(self, tree: Path, code: str, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", BOOT, str(tree), code, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=tree,
            env=tree_env(),
        )
        if not self.proc.stdout.readline():
            raise RuntimeError(f"the baseline worker in {tree} did not start")

    def ask(self, value) -> dict:
        self.proc.stdin.write(json.dumps(value) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(60)


def search_worker(tree: Path, index: str, home: str | Path | None) -> Worker:
    """The tree's `Perspect.search` on the same index (`home` absolute)."""
    return Worker(Path(tree), SEARCH_WORKER, index, str(home or ""))


def run_tree(tree: Path, argv: list[str], **kw) -> subprocess.CompletedProcess:
    """The tree's `perspect` command line, once."""
    code = "import sys; from perspect.cli import run; sys.argv = ['perspect', *sys.argv[2:]]; run()"
    return subprocess.run(
        [sys.executable, "-c", BOOT, str(tree), code, *argv], env=tree_env(), **kw
    )


def make_tree(tree: Path, commit: str) -> None:
    """Export `commit`'s files into `tree` (no git metadata) and link this checkout's graphs, so
    the baseline pays no export and no compile."""
    tree.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    for graphs in (ROOT / "models").glob("*/onnx"):
        dst = tree / "models" / graphs.parent.name / "onnx"
        if not dst.exists():
            subprocess.run(["cp", "-al", str(graphs), str(dst)], check=True)
    data = ROOT / "data"
    if data.exists() and not (tree / "data").exists():
        (tree / "data").symlink_to(data.resolve())


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="export a commit's tree for a bench's --baseline-tree")
    ap.add_argument("--make", type=Path, required=True, help="folder to export the tree into")
    ap.add_argument("--commit", default="main")
    args = ap.parse_args(argv)
    make_tree(args.make, args.commit)
    print(f"{args.make}: {args.commit} exported, graphs linked")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
