"""Load and fault benchmark of `perspect serve`: a real server process, an async client.

    python -m bench load [--index default] [--home DIR] [--clients 1,4,16] [--duration 30]

0. Baseline: the same claims searched in-process, one at a time, without HTTP (on a shared
   machine, the load rows compare with this, measured in the same run).
1. `perspect serve --index INDEX` (one worker) is started and warmed (both engines loaded, a few
   searches of each). Then, for `--fast` and the default pipeline, at 1, 4 and 16 concurrent
   clients (each sends its next search when the last is answered), for `--duration` seconds:
   throughput, p50/p95 latency, errors, while one writer POSTs a new article to
   /indexes/INDEX/news every `--write-every` seconds; each search's `X-Perspect-Index-Version`
   says whether it read the version live when the run began (old) or one an add published
   during it (new).
2. `--workers 2`: 4 clients for `--kill-duration` seconds; one worker is killed with SIGKILL
   `--kill-after` seconds in: what the clients saw (errors and their kinds, requests that
   succeeded again on a new connection, the gap before uvicorn's replacement worker answered).

The writes grow INDEX's news pool (run it on a scratch copy to keep an index as it was).
Its ten claims are its own, not one of the harness's sets: its figures (and the soak bench's)
are over these.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness
from bench.harness import pct

CLAIMS = [
    "animals should have lawful rights",
    "nuclear energy is the way forward",
    "school uniforms should be mandatory",
    "the death penalty should be abolished",
    "social media does more harm than good",
    "university education should be free",
    "zoos should be banned",
    "voting should be compulsory",
    "genetically modified food is safe",
    "homework should be banned",
]
TOPICS = [
    ("animal welfare", "Shelters reported that animals feel pain and fear when abandoned."),
    ("energy", "Engineers said new reactors emit almost no carbon while running."),
    ("schools", "Parents said uniforms reduce bullying over clothes in the classroom."),
    ("justice", "Lawyers argued that the death penalty does not deter violent crime."),
]


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: collections.Counter = field(default_factory=collections.Counter)
    versions: collections.Counter = field(default_factory=collections.Counter)
    workers: collections.Counter = field(default_factory=collections.Counter)
    events: list[tuple[float, float, str, str]] = field(default_factory=list)  # t0, t1, kind, pid
    reconnects: int = 0


@dataclass
class Row:
    mode: str
    clients: int
    searches: int
    seconds: float
    p50: float
    p95: float
    errors: int
    old: int
    new: int
    writes: int
    write_s: float
    error_kinds: dict = field(default_factory=dict)

    @property
    def throughput(self) -> float:
        return self.searches / self.seconds


def article(n: int) -> dict:
    topic, line = TOPICS[n % len(TOPICS)]
    text = (
        f"Report {n} on {topic}, filed during the load benchmark. {line} "
        f"A spokesperson said the figures for week {n} would be published next month. "
        f"Critics disagreed and asked for an independent review of report {n}. "
        "The debate is expected to continue in parliament."
    )
    return {
        "title": f"Load test report {n}",
        "outlet": "Bench Wire",
        "date": "2026-11-25",
        "text": text,
    }


_ARTICLES = itertools.count(int(time.time()) % 100_000 * 100)


async def client(
    c: httpx.AsyncClient, fast: bool, stop_at: float, tally: Tally, start: str, offset: int
):
    failed = False  # the last request failed: the next success is a recovery
    for i in itertools.count(offset):
        if time.monotonic() >= stop_at:
            return
        t0 = time.monotonic()
        try:
            r = await c.post("/search", json={"claim": CLAIMS[i % len(CLAIMS)], "fast": fast})
        except httpx.HTTPError as e:
            kind = type(e).__name__
            tally.errors[kind] += 1
            tally.events.append((t0, time.monotonic(), kind, ""))
            failed = True
            continue
        t1 = time.monotonic()
        pid = r.headers.get("x-perspect-worker", "")
        if r.status_code != 200:
            tally.errors[f"HTTP {r.status_code}"] += 1
            tally.events.append((t0, t1, f"HTTP {r.status_code}", pid))
            failed = True
            continue
        if failed:
            tally.reconnects += 1
            failed = False
        tally.latencies.append(t1 - t0)
        tally.workers[pid] += 1
        version = r.headers.get("x-perspect-index-version", "?")
        tally.versions["old" if version == start else "new"] += 1
        tally.events.append((t0, t1, "ok", pid))


async def writer(url: str, index: str, stop_at: float, every: float, done: list[float]):
    async with httpx.AsyncClient(base_url=url, timeout=300) as c:
        while time.monotonic() + 1 < stop_at:
            t0 = time.monotonic()
            r = await c.post(
                f"/indexes/{index}/news", json={"articles": [article(next(_ARTICLES))]}
            )
            if r.status_code != 200 or r.json()["added"] != 1:
                print(f"  writer: {r.status_code} {r.text[:200]}", file=sys.stderr)
            else:
                done.append(time.monotonic() - t0)
            await asyncio.sleep(max(0.0, every - (time.monotonic() - t0)))


async def live_version(url: str, index: str) -> str:
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        rows = (await c.get("/indexes")).json()["indexes"]
    return next(r["version"] for r in rows if r["name"] == index)


async def cell(url, index, clients, fast, duration, every) -> Row:
    start = await live_version(url, index)
    tally, writes = Tally(), []
    stop_at = time.monotonic() + duration
    t0 = time.monotonic()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as c:
        tasks = [client(c, fast, stop_at, tally, start, k * 3) for k in range(clients)]
        if every > 0:
            tasks.append(writer(url, index, stop_at, every, writes))
        await asyncio.gather(*tasks)
    seconds = time.monotonic() - t0
    return Row(
        "--fast" if fast else "default",
        clients,
        len(tally.latencies),
        seconds,
        1000 * pct(tally.latencies, 0.5),
        1000 * pct(tally.latencies, 0.95),
        sum(tally.errors.values()),
        tally.versions["old"],
        tally.versions["new"],
        len(writes),
        statistics.median(writes) if writes else float("nan"),
        dict(tally.errors),
    )


def start_server(args, port: int, workers: int, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "perspect.cli", "serve", "--index", args.index, "--port"]
    cmd += [str(port), "--workers", str(workers), "--time-budget", str(args.budget)]
    if args.home:
        cmd += ["--home", str(args.home)]
    return subprocess.Popen(
        cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True
    )


async def wait_ready(url: str, workers: int, timeout: float = 600) -> set[int]:
    """Until `workers` distinct processes say both engines are loaded; their pids."""
    ready: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(ready) < workers:
        if time.monotonic() > deadline:
            raise SystemExit(f"the server was not ready in {timeout:.0f} s")
        try:
            async with httpx.AsyncClient(timeout=5) as c:  # a new connection: any worker
                r = await c.get(f"{url}/ready", headers={"Connection": "close"})
            body = r.json()
            if r.status_code == 200 and all(e["loaded"] for e in body["engines"].values()):
                ready.add(body["pid"])
        except (httpx.HTTPError, ValueError, KeyError):
            pass
        await asyncio.sleep(0.3)
    return ready


async def warm(url: str) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=120) as c:
        for fast, claim in itertools.product((False, True), CLAIMS[:4]):
            await c.post("/search", json={"claim": claim, "fast": fast})


def _kinds(kinds: dict) -> str:
    return f" ({', '.join(f'{k}: {n}' for k, n in kinds.items())})" if kinds else ""


HEADERS = ["pipeline", "clients", "searches", "throughput /s", "p50 ms", "p95 ms", "errors",
           "old / new version", "adds (median s)"]  # fmt: skip


def print_table(rows: list[Row]) -> None:
    cells = [
        [r.mode, r.clients, r.searches, f"{r.throughput:.2f}", f"{r.p50:,.0f}", f"{r.p95:,.0f}",
         f"{r.errors}{_kinds(r.error_kinds)}", f"{r.old} / {r.new}",
         f"{r.writes} ({r.write_s:.1f})"]
        for r in rows
    ]  # fmt: skip
    print(harness.table(HEADERS, cells))


async def kill_run(args, url: str, proc: subprocess.Popen) -> dict:
    pids = await wait_ready(url, 2)
    await warm(url)
    start = await live_version(url, args.index)
    tally = Tally()
    clients = 4
    t_begin = time.monotonic()
    stop_at = t_begin + args.kill_duration
    victim = min(pids)
    killed_at: list[float] = []

    replaced: list[tuple[float, int]] = []  # when a new worker first said it was ready

    async def killer() -> None:
        await asyncio.sleep(args.kill_after)
        os.kill(victim, signal.SIGKILL)
        killed_at.append(time.monotonic())
        # the clients keep their connections (to the survivor, once theirs to the killed worker
        # broke): probe on new connections for uvicorn's replacement worker
        while time.monotonic() < stop_at and not replaced:
            try:
                async with httpx.AsyncClient(timeout=5) as c:
                    r = await c.get(f"{url}/ready", headers={"Connection": "close"})
                body = r.json()
                if r.status_code == 200 and body["pid"] not in pids:
                    replaced.append((time.monotonic(), body["pid"]))
            except (httpx.HTTPError, ValueError, KeyError):
                pass
            await asyncio.sleep(0.5)

    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as c:
        await asyncio.gather(
            killer(), *(client(c, True, stop_at, tally, start, k * 3) for k in range(clients))
        )
    k = killed_at[0]
    after = [e for e in tally.events if e[1] >= k]
    before = [e for e in tally.events if e[1] < k and e[2] == "ok"]
    new_pids = {e[3] for e in tally.events if e[2] == "ok" and e[3] and int(e[3]) not in pids}
    first_new = min((e[1] for e in after if e[2] == "ok" and e[3] in new_pids), default=None)
    errors = [e for e in tally.events if e[2] != "ok"]
    ok_after = [e for e in after if e[2] == "ok"]
    return {
        "workers_before": sorted(pids),
        "killed": victim,
        "errors": dict(tally.errors),
        "error_window_s": round(max(e[1] for e in errors) - k, 2) if errors else 0.0,
        "recovered_by_retry": tally.reconnects,
        "replacement_ready_s": round(replaced[0][0] - k, 1) if replaced else None,
        "replacement_pid": replaced[0][1] if replaced else None,
        "replacement_answered_clients": sorted(new_pids),
        "replacement_first_client_answer_s": None if first_new is None else round(first_new - k, 1),
        "throughput_before": round(len(before) / (k - t_begin), 2),
        "throughput_after": round(len(ok_after) / max(1e-9, stop_at - k), 2),
        "p95_before_ms": round(1000 * pct([e[1] - e[0] for e in before], 0.95)),
        "p95_after_ms": round(1000 * pct([e[1] - e[0] for e in ok_after], 0.95)),
        "answers_by_worker": {p: n for p, n in tally.workers.items()},
    }


def baseline(args) -> list[Row]:
    """The same claims searched in this process, one at a time, no HTTP: what the machine gives
    a search at this moment (the load rows are only comparable with this, on a shared machine)."""
    from perspect import Perspect

    rows = []
    for fast in (True, False):
        with Perspect.open(args.index, home=args.home, fast=fast) as p:
            for claim in CLAIMS[:2]:
                p.search(claim)  # warm
            t0 = time.monotonic()
            took = [harness.timed(lambda c=c: p.search(c))[0] / 1000 for c in CLAIMS]
            seconds = time.monotonic() - t0
        mode = "--fast" if fast else "default"
        rows.append(
            Row(
                f"{mode}, in-process (no HTTP)",
                1,
                len(took),
                seconds,
                1000 * pct(took, 0.5),
                1000 * pct(took, 0.95),
                0,
                0,
                0,
                0,
                float("nan"),
            )
        )
    return rows


async def main_async(args) -> int:
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = baseline(args) if args.baseline else []
    if rows:
        print_table(rows)
    if args.clients:
        port = args.port
        proc = start_server(args, port, 1, logs / "serve-1.log")
        url = f"http://127.0.0.1:{port}"
        try:
            t0 = time.monotonic()
            await wait_ready(url, 1)
            print(f"server ready in {time.monotonic() - t0:.1f} s (both engines)", flush=True)
            await warm(url)
            for fast in (True, False):
                for n in args.clients:
                    row = await cell(url, args.index, n, fast, args.duration, args.write_every)
                    rows.append(row)
                    print_table([row])
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        print()
        print_table(rows)
    kill = None
    if args.kill:
        port = args.port + 1
        proc = start_server(args, port, 2, logs / "serve-2.log")
        try:
            kill = await kill_run(args, f"http://127.0.0.1:{port}", proc)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
        print("\nkill run (2 workers, 4 clients, --fast):")
        print(json.dumps(kill, indent=2))
    rows = [r.__dict__ | {"throughput": r.throughput} for r in rows]
    harness.write_json(args.json, {"rows": rows, "kill": kill})
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("index", "home", "json"):
        ap.add_argument(f"--{opt}", **harness.COMMON[opt])
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument(
        "--clients", type=lambda v: [int(x) for x in v.split(",") if x], default=[1, 4, 16]
    )
    ap.add_argument("--duration", type=float, default=30.0, help="seconds per row")
    ap.add_argument("--write-every", type=float, default=5.0, help="seconds between adds (0: none)")
    ap.add_argument("--budget", type=float, default=60.0, help="the server's time budget")
    ap.add_argument("--no-kill", dest="kill", action="store_false", help="skip the kill run")
    ap.add_argument(
        "--no-baseline", dest="baseline", action="store_false", help="skip the in-process rows"
    )
    ap.add_argument("--kill-after", type=float, default=10.0)
    ap.add_argument("--kill-duration", type=float, default=60.0, help="seconds of the kill run")
    ap.add_argument("--logs", default=str(harness.ROOT / ".cache" / "load"))
    return asyncio.run(main_async(ap.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
