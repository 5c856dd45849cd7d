"""Fuzz `perspect serve` from its own OpenAPI description with schemathesis, every check on.

    python bench/fuzz_api.py [--max-examples 100] [--seed 1] [--index NAME --home DIR]
    python bench/fuzz_api.py --url http://127.0.0.1:8000 --max-examples 12 --json

Without --url it builds a scratch index (BM25 over the PERSPECTRUM perspective pool, which
`make data` fetches, and two news articles), starts
`perspect serve` over it with the shipped models, and stops it after. schemathesis (`st run`)
then sends what it generates from /openapi.json, in each of its phases (examples, coverage,
fuzzing, stateful), valid and invalid requests alike, with every check (`--checks all`:
server errors, statuses, content types, headers and bodies against the description, valid data
accepted, invalid data rejected, unsupported methods answered 405 with `Allow`, ...).

The summary reads schemathesis' own event log: how many requests, the statuses seen per
operation, and what the description promises that was not kept: a 500, a status the
description does not list, an error that is not one line of JSON `{"error": ...}`, an answer
slower than --slow seconds, and schemathesis' failures. Exit 1 when any.
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SCHEMATHESIS = Path(sys.executable).parent / "schemathesis"


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


def fuzz(
    url: str,
    out: Path,
    max_examples: int = 12,
    seed: int = 1,
    timeout: float = 600,
    slow: float = 30.0,
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
        event = json.loads(line)
        done = event.get("ScenarioFinished")
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


# -- the standalone run: a scratch index and a real `perspect serve` ---------------------------
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(home: Path, index: str, port: int, model: str | None) -> subprocess.Popen:
    args = ["serve", "--index", index, "--home", str(home), "--port", str(port)]
    args += ["--time-budget", "60"] + (["--model", model] if model else [])
    return subprocess.Popen(
        [sys.executable, "-m", "perspect.cli", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _wait_ready(url: str, proc: subprocess.Popen, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"perspect serve did not get ready at {url}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", help="an already running perspect serve (else one is started)")
    ap.add_argument("--index", help="serve this index of --home (default: a scratch one)")
    ap.add_argument("--home")
    ap.add_argument("--model", help="pair model folder (default: the bundle's)")
    ap.add_argument("--max-examples", type=int, default=100, help="per operation and phase")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--slow", type=float, default=30.0, help="an answer slower is a failure")
    ap.add_argument("--out", help="folder for schemathesis' reports (default: a temporary one)")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="perspect-fuzz-"))
    proc = None
    url = args.url
    if url is None:
        home = Path(args.home) if args.home else out / "home"
        index = args.index or "fuzz"
        if args.index is None:
            _scratch_index(home)
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        proc = _serve(home, index, port, args.model)
        _wait_ready(url, proc)
    try:
        rep = fuzz(url.rstrip("/"), out, args.max_examples, args.seed, slow=args.slow)
    finally:
        if proc is not None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
    if args.json:
        print(json.dumps({**asdict(rep), "ok": rep.ok, "reports": str(out)}, indent=2))
    else:
        print(f"{rep.requests} requests ({rep.generated} test cases) in {rep.seconds:.0f} s; "
              f"slowest answer {rep.slowest_s:.2f} s; reports in {out}")  # fmt: skip
        for op, seen in rep.statuses.items():
            print(f"  {op:32} {', '.join(f'{c} x{n}' for c, n in seen.items())}")
        for line in rep.failures + rep.broken:
            print(f"  FAIL {line}")
        print("ok" if rep.ok else "FAILED")
    return 0 if rep.ok else 1


if __name__ == "__main__":
    sys.exit(main())
