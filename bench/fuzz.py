"""Fuzzing: failures found in the HTTP API (schemathesis) and in every input reader (hypothesis).

    python -m bench fuzz api [--max-examples 100] [--seed 1] [--index NAME --home DIR]
    python -m bench fuzz api --url http://127.0.0.1:8000 --max-examples 12 --json
    python -m bench fuzz readers [--seconds 600] [--readers json,csv,...] [--seed 1]

`api`: without --url it builds a scratch index (BM25 over the PERSPECTRUM perspective pool, which
`make data` fetches, and two news articles), starts `perspect serve` over it with the shipped
models, and stops it after. schemathesis (`st run`) then sends what it generates from
/openapi.json, in each of its phases (examples, coverage, fuzzing, stateful), valid and invalid
requests alike, with every check (`--checks all`: server errors, statuses, content types, headers
and bodies against the description, valid data accepted, invalid data rejected, unsupported
methods answered 405 with `Allow`, ...). The summary reads schemathesis' own event log: how many
requests, the statuses seen per operation, and what the description promises that was not kept:
a 500, a status the description does not list, an error that is not one line of JSON
`{"error": ...}`, an answer slower than --slow seconds, and schemathesis' failures. Exit 1 when any.

`readers`: the properties of tests/test_fuzz_readers.py, run far longer than the test suite can
afford. Why a bench as well as the tests: the suite gives each reader a few dozen examples so that
it stays fast; the bugs that a reader still hides need thousands. The contract is the same: each
input is read or refused with the product's `InputError`; any other exception is a failure.
Hypothesis generates the inputs (atheris is not a dependency), in rounds of examples until the
reader's time is spent, each round with its own seed so that no round repeats another. A failure
does not stop the run: it is counted, and the first of each kind (exception and where it was
raised) is printed with its input, to be kept as an `@example` in the tests. Exit 1 on any.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness

ROOT = harness.ROOT
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"

# ---- api: schemathesis against `perspect serve` --------------------------------------------------


@dataclass
class FuzzReport:
    requests: int = 0
    seconds: float = 0.0
    generated: int = 0
    statuses: dict[str, dict[str, int]] = field(default_factory=dict)  # "POST /search" -> ...
    failures: list[str] = field(default_factory=list)  # schemathesis' failures and errors
    broken: list[str] = field(default_factory=list)  # 500s, undocumented, non-JSON errors, slow
    slowest_s: float = 0.0
    exit_code: int = 0

    @property
    def ok(self) -> bool:
        return not self.failures and not self.broken and self.requests > 0


def _operation(spec: dict, method: str, uri: str) -> str | None:
    """The operation of the description a request went to ("POST /indexes/{name}/news")."""
    path = "/" + uri.split("://", 1)[-1].split("/", 1)[-1].split("?")[0]
    for template, ops in spec["paths"].items():
        parts, got = template.strip("/").split("/"), path.strip("/").split("/")
        if len(parts) == len(got) and all(
            p == g or (p.startswith("{") and p.endswith("}"))
            for p, g in zip(parts, got, strict=True)
        ):
            return f"{method} {template}" if method.lower() in ops else f"{method} {template}*"
    return None


def run_schemathesis(
    url: str, out: Path, max_examples: int = 12, seed: int = 1, timeout: float = 600, slow=30.0
) -> FuzzReport:
    """Run `st run` against the server at `url` and summarise its event log."""
    out.mkdir(parents=True, exist_ok=True)
    spec = httpx.get(f"{url}/openapi.json", timeout=30).json()
    # the comparator loads at the first POST /compare (/ready does not wait for it): load it
    # now, so that --slow measures answers, not that one load
    example = spec["components"]["schemas"]["CompareRequest"]["examples"][0]
    httpx.post(f"{url}/compare", json=example, timeout=600)
    cmd = [
        str(SCHEMATHESIS), "run", f"{url}/openapi.json", "--checks", "all",
        "--max-examples", str(max_examples), "--seed", str(seed), "--workers", "1",
        "--request-timeout", str(slow * 4), "--max-response-time", str(slow),
        "--report", "ndjson,json", "--report-dir", str(out),
        "--suppress-health-check", "all", "--no-color",
    ]  # fmt: skip
    t0 = time.monotonic()
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=out)
    rep = FuzzReport(seconds=round(time.monotonic() - t0, 1), exit_code=run.returncode)
    (out / "st-output.txt").write_text(run.stdout + run.stderr, encoding="utf-8")
    summary = json.loads(next(out.glob("json-*.json")).read_text())
    rep.generated = summary["test_cases"]["generated"]
    rep.failures = [
        f"{f['code']} {f['title']} x{f['count']}: {', '.join(f['operations'])}"
        for f in summary["failures"]
    ] + [f"error: {e}" for e in summary["errors"]]
    statuses: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in next(out.glob("ndjson-*.ndjson")).read_text().splitlines():
        done = json.loads(line).get("ScenarioFinished")
        if not done:
            continue
        for inter in (done["recorder"].get("interactions") or {}).values():
            req, res = inter["request"], inter.get("response")
            op = _operation(spec, req["method"], req["uri"]) or f"{req['method']} (no path)"
            rep.requests += 1
            if res is None:
                rep.broken.append(f"{op}: no answer ({inter.get('error', 'timeout')})")
                continue
            code = res["status_code"]
            statuses[op][str(code)] += 1
            rep.slowest_s = max(rep.slowest_s, res.get("elapsed") or 0.0)
            if (res.get("elapsed") or 0.0) > slow:
                rep.broken.append(f"{op}: {code} after {res['elapsed']:.1f} s")
            documented = _documented(spec, op)
            if code >= 500 and code not in (503, 504):
                rep.broken.append(f"{op}: {code} {_body(res)[:200]}")
            elif documented is not None and str(code) not in documented and code != 405:
                rep.broken.append(f"{op}: {code} is not in the description")
            if code >= 400 and not _one_line_error(res):
                rep.broken.append(f"{op}: {code} answered {_body(res)[:120]!r}, not a JSON error")
    rep.statuses = {op: dict(sorted(c.items())) for op, c in sorted(statuses.items())}
    return rep


def _documented(spec: dict, op: str) -> set[str] | None:
    method, template = op.split(" ", 1)
    if template.endswith("*") or template not in spec["paths"]:
        return None  # a method the path does not take: a 405 with Allow, checked by schemathesis
    return set(spec["paths"][template][method.lower()]["responses"])


def _body(res: dict) -> str:
    content = res.get("content") or {}
    if "$base64" in content:
        return base64.b64decode(content["$base64"]).decode("utf-8", "replace")
    return content.get("string", "") if isinstance(content, dict) else str(content)


def _one_line_error(res: dict) -> bool:
    """An error answer: JSON; `{"error": "one line", ...}` except /ready's status object."""
    ctype = (res.get("headers") or {}).get("content-type", [""])[0]
    if not ctype.startswith("application/json"):
        return False
    try:
        body = json.loads(_body(res))
    except ValueError:
        return False
    if "ready" in body:  # GET /ready's 503: the engines' status
        return True
    return isinstance(body.get("error"), str) and "\n" not in body["error"] and body["error"]


# the standalone run: a scratch index and a real `perspect serve`
NEWS = [
    {
        "id": "a1",
        "title": "Parliament debates animal law",
        "outlet": "Daily Planet",
        "date": "2026-01-02",
        "text": "Parliament debated animal rights on Monday. Dr. Smith said pets feel pain.",
    },
    {
        "id": "a2",
        "title": "Energy",
        "outlet": "The Sun",
        "date": "2026-02-03",
        "text": "Nuclear plants produce little carbon. Critics disagree.",
    },
]


def _scratch_index(home: Path) -> None:
    """BM25 over PERSPECTRUM's perspective pool (`make data`) and two news articles."""
    from perspect.core.index.config import IndexConfig
    from perspect.indexer.indexer import Indexer, Source

    pool = ROOT / "data" / "perspectrum" / "perspective_pool_v1.0.json"
    if not pool.is_file():
        raise SystemExit(f"no {pool}: run `make data`, or pass --index and --home")
    home.mkdir(parents=True, exist_ok=True)
    news = home.parent / "news.jsonl"
    news.write_text("".join(json.dumps(a) + "\n" for a in NEWS), encoding="utf-8")
    # no stored stance states: a build in seconds (a search computes them for its candidates)
    Indexer("fuzz", home=home, config=IndexConfig(("bm25",), stance_states=False)).build(
        [Source("perspectives", pool), Source("news", news)]
    )


def _serve(home: Path, index: str, port: int, model: str | None) -> subprocess.Popen:
    args = ["serve", "--index", index, "--home", str(home), "--port", str(port)]
    args += ["--time-budget", "60"] + (["--model", model] if model else [])
    return subprocess.Popen(
        [sys.executable, "-m", "perspect.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def api(args) -> int:
    """Failures schemathesis finds in `perspect serve` from its own OpenAPI description."""
    out = Path(args.out or tempfile.mkdtemp(prefix="perspect-fuzz-"))
    proc = None
    url = args.url
    if url is None:
        home = Path(args.home) if args.home else out / "home"
        index = args.index or "fuzz"
        if args.index is None:
            _scratch_index(home)
        port = harness.free_port()
        url = f"http://127.0.0.1:{port}"
        proc = _serve(home, index, port, args.model)
        harness.wait_ready(url, proc)
    try:
        rep = run_schemathesis(url.rstrip("/"), out, args.max_examples, args.seed, slow=args.slow)
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    if args.json:
        print(json.dumps({**asdict(rep), "ok": rep.ok, "reports": str(out)}, indent=2))
        return 0 if rep.ok else 1
    print(f"{rep.requests} requests ({rep.generated} test cases) in {rep.seconds:.0f} s; "
          f"slowest answer {rep.slowest_s:.2f} s; reports in {out}")  # fmt: skip
    for op, seen in rep.statuses.items():
        print(f"  {op:32} {', '.join(f'{c} x{n}' for c, n in seen.items())}")
    for line in rep.failures + rep.broken:
        print(f"  FAIL {line}")
    print("ok" if rep.ok else "FAILED")
    return 0 if rep.ok else 1


def _api_args(p) -> None:
    p.add_argument("--url", help="an already running perspect serve (else one is started)")
    p.add_argument("--index", help="serve this index of --home (default: a scratch one)")
    p.add_argument("--home")
    p.add_argument("--model", help="pair model folder (default: the bundle's)")
    p.add_argument("--max-examples", type=int, default=100, help="per operation and phase")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--slow", type=float, default=30.0, help="an answer slower is a failure")
    p.add_argument("--out", help="folder for schemathesis' reports (default: a temporary one)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


# ---- readers: hypothesis against every input reader ----------------------------------------------

# the readers' names, here so that --help imports neither hypothesis nor the tests
READER_NAMES = ("json", "jsonl", "csv", "tsv", "txt", "news", "folder", "web", "article")


def _readers() -> dict:
    """name -> (hypothesis strategies, the property of tests/test_fuzz_readers.py)."""
    import functools

    from hypothesis import strategies as st

    from tests import test_fuzz_readers as fz

    def pool(fmt: str):
        return {"data": fz.FILES[fmt], "opts": fz.pool_opts}, functools.partial(fz.check_pool, fmt)

    web = {
        "feed": fz.FILES["feed"] | fz.FILES["html"],
        "ctype": st.sampled_from(fz.CTYPES),
        "page": fz.FILES["html"],
        "status": st.sampled_from([200, 404]),
    }
    return {
        **{fmt: pool(fmt) for fmt in ("json", "jsonl", "csv", "tsv", "txt")},  # JSON: PERSPECTRUM
        "news": ({"data": fz.FILES["news"], "opts": fz.news_opts}, fz.check_news),
        "folder": (
            {"files": fz.folder_files, "pool": st.sampled_from(["news", "documents"])},
            fz.check_folder,
        ),
        "web": (web, fz.check_web),
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


def fuzz_reader(strategies: dict, check, seconds: float, base_seed: int) -> Tally:
    """Run one reader's property until `seconds` are spent; every exception it lets out is
    counted (the property itself accepts InputError), none stops the run."""
    from hypothesis import HealthCheck, Phase, given, seed, settings

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


def readers(args) -> int:
    """Failures (exceptions other than InputError) found in every input reader in a set time."""
    import warnings

    from hypothesis.errors import HypothesisWarning

    warnings.filterwarnings("ignore", category=HypothesisWarning)  # the repr of a 200 kB input
    warnings.filterwarnings("ignore", "To avoid breaking existing software", DeprecationWarning)
    names = [n.strip() for n in args.readers.split(",") if n.strip()]
    unknown = [n for n in names if n not in READER_NAMES]
    if unknown:
        print(f"error: unknown reader(s) {', '.join(unknown)}; one of {', '.join(READER_NAMES)}")
        return 2
    found = _readers()
    again = ["--seconds", f"{args.seconds:g}", "--seed", str(args.seed)]
    command = [sys.executable, "-m", "bench", "fuzz", "readers", "--readers", ",".join(names)]
    print(f"command: {shlex.join(command + again)}")
    print(f"{'reader':8} {'examples':>9} {'failures':>9} {'slowest s':>10}  repeat with")
    total = 0
    for name in names:
        t = fuzz_reader(*found[name], args.seconds, args.seed)
        total += t.failures
        print(f"{name:8} {t.examples:9,} {t.failures:9,} {t.slowest_s:10.2f}  "
              f"--readers {name} {shlex.join(again)}", flush=True)  # fmt: skip
        for kind, example in t.kinds.items():
            print(f"    {kind}\n      first input: {example[:400]}")
            if args.save:
                with args.save.open("a", encoding="utf-8") as out:
                    out.write(f"# {name}: {kind}\n{example}\n")
    print(f"failures: {total}")
    return 1 if total else 0


def _readers_args(p) -> None:
    p.add_argument("--seconds", type=float, default=600.0, help="per reader (default 600)")
    p.add_argument("--readers", default=",".join(READER_NAMES), help="comma-separated; default all")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--save", type=Path, help="write the first input of each failure here, in full")


def main(argv: list[str] | None = None) -> int:
    subs = {"api": (api, (), _api_args), "readers": (readers, (), _readers_args)}
    return harness.commands(__doc__, subs)(argv)


if __name__ == "__main__":
    raise SystemExit(main())
