"""Soak of `perspect serve`: hours of searches while news and documents are added and deleted.

    python -m bench soak [--index default] [--home indexes] [--minutes 60] [--clients 2]
                         [--write-every 5] [--delete-every 4] [--cli-every 20] [--out FILE]

What a service that stays up meets (issue 57). On a scratch copy of INDEX, for `--minutes`:
`perspect serve` (its own process, one worker) answers `--clients` clients searching without
pause (the default pipeline, the load bench's claims); a writer POSTs an article every
`--write-every` s, to /news and /documents in turn, each with a token of its own; every
`--delete-every`th write a `perspect index delete` process (a second writer) deletes the oldest
article still in; every `--cli-every` s another process searches (`perspect search TOKEN`, bm25)
for the last article added: its top hit (a write the service published is seen by another
process). Per `--bucket` seconds: searches, errors, p50/p95, the server's resident memory and
fewest open file descriptors, the index's size on disk (each inode once) and its versions.

At the end every article still in is found by its token, every deleted one is not, and `perspect
index status` counts the sentences added less those deleted. The verdict: 0 errors, nothing lost
or doubled, memory and descriptors flat (the last quarter's mean at most 10 % over the second
quarter's; descriptors 4 more, a few clients' sockets), versions bounded (layout.IndexDir.publish
drops every version no reader leases). Exit 1 when one fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness
from bench.harness import pct
from bench.load import CLAIMS, TOPICS  # the load bench's claims and article topics


def perspect(*args: str) -> list[str]:
    return [sys.executable, "-m", "perspect.cli", *args]


@dataclass
class Bucket:
    """One `--bucket` seconds of the run."""

    minute: int
    searches: int = 0
    errors: int = 0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    rss_mb: float = 0.0
    fds: int = 0
    disk_mb: float = 0.0
    versions: int = 0
    writes: int = 0
    deletes: int = 0
    cli_searches: int = 0
    latencies: list[float] = field(default_factory=list, repr=False)


@dataclass
class Run:
    buckets: list[Bucket] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    added: dict[str, dict] = field(default_factory=dict)  # article id -> {pool, token, sentences}
    deleted: set[str] = field(default_factory=set)
    cli_misses: list[str] = field(default_factory=list)
    max_versions: int = 0  # the most versions on disk at once, sampled each half second

    def now(self) -> Bucket:
        return self.buckets[-1]


def article(run_id: str, n: int) -> tuple[str, str, dict]:
    topic, line = TOPICS[n % len(TOPICS)]
    token = f"soak{run_id}x{n}"
    aid = f"soak-{run_id}-{n}"
    text = (
        f"Report {token} on {topic}. {line} "
        f"A spokesperson said the figures for week {n} would be published next month. "
        "Critics asked for an independent review."
    )
    return aid, token, {"id": aid, "title": f"Soak report {n}", "outlet": "Soak Wire", "text": text}


# -- what is measured of the server and the index --------------------------------------------------
def rss_mb(pid: int) -> float:
    """Resident memory of the server and its children (uvicorn may fork), MB."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    total = 0
    for p in [pid, *map(int, children)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


def fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def disk_mb(folder: Path) -> float:
    """Bytes under `folder`, each inode once (versions share files by hard links)."""
    seen, total = set(), 0
    for root, _dirs, files in os.walk(folder):
        for f in files:
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total / 2**20


def versions(folder: Path) -> int:
    try:
        return sum(1 for p in (folder / "versions").iterdir() if p.is_dir())
    except OSError:
        return 0


# -- the actors ------------------------------------------------------------------------------------
async def client(c: httpx.AsyncClient, run: Run, stop_at: float, offset: int) -> None:
    i = offset
    while time.monotonic() < stop_at:
        i += 1
        t0 = time.monotonic()
        try:
            r = await c.post("/search", json={"claim": CLAIMS[i % len(CLAIMS)]})
            ok = r.status_code == 200
            why = "" if ok else f"HTTP {r.status_code}: {r.text[:200]}"
        except httpx.HTTPError as e:
            ok, why = False, f"{type(e).__name__}: {e}"
        b = run.now()
        if ok:
            b.searches += 1
            b.latencies.append(time.monotonic() - t0)
        else:
            b.errors += 1
            run.errors.append(f"search: {why}")


async def writer(c, run: Run, args, run_id: str, home: Path, stop_at: float) -> None:
    n = 0
    while time.monotonic() + 1 < stop_at:
        t0 = time.monotonic()
        n += 1
        pool = "news" if n % 2 else "documents"
        aid, token, body = article(run_id, n)
        try:
            r = await c.post(f"/indexes/{args.index}/{pool}", json={"articles": [body]})
            rep = r.json() if r.status_code == 200 else {}
            if rep.get("added") != 1:
                raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
            run.added[aid] = {"pool": pool, "token": token, "sentences": rep["sentences"]}
            run.now().writes += 1
        except (httpx.HTTPError, RuntimeError, ValueError) as e:
            run.errors.append(f"add {aid}: {e}")
            run.now().errors += 1
        if n % args.delete_every == 0:
            await delete_oldest(run, args, home)
        await asyncio.sleep(max(0.0, args.write_every - (time.monotonic() - t0)))


async def delete_oldest(run: Run, args, home: Path) -> None:
    """`perspect index delete` in its own process: a second writer beside the service's adds.
    An article's sentences are ARTICLE#POSITION; ids that do not exist are passed over."""
    live = [a for a in run.added if a not in run.deleted]
    if not live:
        return
    aid = live[0]
    ids = [f"{aid}#{i}" for i in range(32)]
    pool = run.added[aid]["pool"]
    cmd = perspect("index", "delete", "--name", args.index, "--home", str(home), "--pool", pool)
    proc = await asyncio.create_subprocess_exec(
        *cmd, "--ids", *ids, "-q", stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode == 0:
        run.deleted.add(aid)
        run.now().deletes += 1
    else:
        run.errors.append(f"delete {aid}: {err.decode()[-300:]}")
        run.now().errors += 1


async def cli_reader(run: Run, args, home: Path, stop_at: float) -> None:
    """Another process reads what the service wrote: the last article added is its top hit."""
    while time.monotonic() + 5 < stop_at:
        t0 = time.monotonic()
        live = [a for a in run.added if a not in run.deleted]
        if live:
            aid = live[-1]
            info = run.added[aid]
            cmd = perspect(
                "search", info["token"], "--index", args.index, "--home", str(home),
                "--pool", info["pool"], "--retriever", "bm25", "--k", "3", "--json",
            )  # fmt: skip
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            out, err = await proc.communicate()
            run.now().cli_searches += 1
            if proc.returncode != 0:
                run.errors.append(f"cli search: {err.decode()[-300:]}")
                run.now().errors += 1
            elif aid not in run.deleted:  # a delete may land while it searched
                hits = json.loads(out)["hits"]
                if not hits or not hits[0]["id"].startswith(f"{aid}#"):
                    run.cli_misses.append(aid)
        await asyncio.sleep(max(1.0, args.cli_every - (time.monotonic() - t0)))


async def sampler(run: Run, pid: int, folder: Path, stop_at: float, bucket_s: float) -> None:
    start = time.monotonic()
    while True:
        end = start + bucket_s * len(run.buckets)
        # descriptors: the bucket's fewest, sampled each half second. A write in progress holds
        # a new version's files for a moment (one sample under load once read 22 where the
        # others read 19); a leak raises the fewest too.
        fewest = fds(pid)
        while time.monotonic() < end:
            await asyncio.sleep(min(0.5, max(0.0, end - time.monotonic())))
            fewest = min(fewest, fds(pid))
            run.max_versions = max(run.max_versions, versions(folder))
        b = run.now()
        if b.latencies:
            b.p50_ms, b.p95_ms = 1000 * pct(b.latencies, 0.5), 1000 * pct(b.latencies, 0.95)
        b.rss_mb, b.fds = rss_mb(pid), min(fewest, fds(pid))
        b.disk_mb, b.versions = disk_mb(folder), versions(folder)
        print(ROW.format_map(vars(b)), flush=True)
        if time.monotonic() >= stop_at - 0.5:
            return
        run.buckets.append(Bucket(len(run.buckets)))


ROW = (
    "{minute:>4} {searches:>8} {errors:>6} {p50_ms:>7.0f} {p95_ms:>7.0f} {rss_mb:>8.0f} "
    "{fds:>5} {disk_mb:>8.1f} {versions:>4} {writes:>6} {deletes:>7} {cli_searches:>4}"
)  # a bucket's line, under HEADER
HEADER = "   # searches errors p50(ms) p95(ms)  RSS(MB)   fds disk(MB) vers writes deletes  cli"


# -- the end: nothing lost, nothing doubled --------------------------------------------------------
async def check_writes(c: httpx.AsyncClient, run: Run, index: str) -> dict:
    """Every article still in is found by its token (its top hit), every deleted one is not."""
    lost, ghosts = [], []
    for aid, info in run.added.items():
        body = {"claim": info["token"], "pool": info["pool"], "retriever": "bm25", "k": 3}
        r = await c.post("/search", json=body)
        hits = r.json().get("hits", []) if r.status_code == 200 else []
        found = any(h["id"].startswith(f"{aid}#") for h in hits)
        if aid in run.deleted and found:
            ghosts.append(aid)
        elif aid not in run.deleted and not found:
            lost.append(aid)
    return {"lost": lost, "not_deleted": ghosts}


def pool_counts(home: Path, index: str) -> dict[str, int]:
    cmd = perspect("index", "status", "--name", index, "--home", str(home), "--json")
    got = json.loads(subprocess.check_output(cmd, text=True, stderr=subprocess.PIPE))
    rows = got["indexes"] if isinstance(got, dict) and "indexes" in got else got
    row = rows[0] if isinstance(rows, list) else rows
    return {p: e["count"] for p, e in row["pools"].items()}


def flat(values: list[float], slack: float = 0.0) -> tuple[bool, float, float]:
    """The last quarter's mean at most 10 % (plus `slack`) over the second quarter's (the first
    is warm-up); a fall is no leak."""
    q = max(1, len(values) // 4)
    second, last = values[q : 2 * q] or values[:1], values[-q:]
    a, b = statistics.fmean(second), statistics.fmean(last)
    return b <= a * 1.10 + slack, a, b


def verdict(run: Run, writes: dict, counts: dict, expected: dict, readers: int) -> dict:
    full = run.buckets[:-1] if len(run.buckets) > 2 else run.buckets  # the last may be partial
    rss_ok, rss_a, rss_b = flat([b.rss_mb for b in full])
    fd_ok, fd_a, fd_b = flat([float(b.fds) for b in full], slack=4)  # a client's sockets
    lat = [x for b in run.buckets for x in b.latencies]
    return {
        "searches": sum(b.searches for b in run.buckets),
        "errors": len(run.errors),
        "p50_ms": round(1000 * pct(lat, 0.5), 1) if lat else None,
        "p95_ms": round(1000 * pct(lat, 0.95), 1) if lat else None,
        "writes": len(run.added),
        "deletes": len(run.deleted),
        "cli_searches": sum(b.cli_searches for b in run.buckets),
        "cli_misses": len(run.cli_misses),
        "lost": writes["lost"],
        "not_deleted": writes["not_deleted"],
        "counts": counts,
        "expected_counts": expected,
        "rss_mb": {"second_quarter": round(rss_a, 1), "last_quarter": round(rss_b, 1)},
        "fds": {"second_quarter": round(fd_a, 1), "last_quarter": round(fd_b, 1)},
        "max_versions": run.max_versions,
        "ok": {
            "no errors": not run.errors,
            "nothing lost or doubled": not writes["lost"]
            and not writes["not_deleted"]
            and counts == expected,
            "other process sees writes": not run.cli_misses,
            "memory flat": rss_ok,
            "descriptors flat": fd_ok,
            # the live one, the one being written, and one per reader that may hold an older
            # one (each client's search in the server, the CLI reader): never more, however
            # many writes
            "versions reclaimed": run.max_versions <= 2 + readers,
        },
    }


# -- the run ---------------------------------------------------------------------------------------
def copy_index(home: Path, index: str, scratch: Path) -> Path:
    """The live version of INDEX (and what sits beside its versions) into a scratch home."""
    src = home / index
    live = (src / "CURRENT").read_text().strip()
    dst = scratch / index

    def skip(folder: str, names: list[str]) -> list[str]:
        if Path(folder) == src / "versions":
            return [n for n in names if n != live]
        return [n for n in names if n in ("LOCK", "LEASE")]

    shutil.copytree(src, dst, ignore=skip)
    return dst


async def wait_ready(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=url, timeout=5) as c:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"error: the server exited ({proc.returncode}) before ready")
            try:
                r = await c.get("/ready")
                if r.status_code == 200:
                    return
                failed = [f"{n}: {e['error']}" for n, e in r.json().get("engines", {}).items()
                          if e.get("error")]  # fmt: skip
                if failed:  # an engine that failed to load never becomes ready: say why now
                    raise SystemExit(f"error: the server cannot answer: {failed[0]}")
            except (httpx.HTTPError, ValueError):
                pass
            await asyncio.sleep(0.5)
    raise SystemExit(f"error: the server was not ready in {timeout:.0f} s")


async def soak(args, home: Path, folder: Path, proc: subprocess.Popen, url: str) -> dict:
    await wait_ready(url, proc, args.ready_timeout)
    before = pool_counts(home, args.index)
    run_id = f"{os.getpid()}{int(time.time()) % 10000}"
    run = Run(buckets=[Bucket(0)])
    stop_at = time.monotonic() + 60 * args.minutes
    print(HEADER, flush=True)
    limits = httpx.Limits(max_connections=args.clients + 2)
    async with httpx.AsyncClient(base_url=url, timeout=args.request_timeout, limits=limits) as c:
        await asyncio.gather(
            *(client(c, run, stop_at, k) for k in range(args.clients)),
            writer(c, run, args, run_id, home, stop_at),
            cli_reader(run, args, home, stop_at),
            sampler(run, proc.pid, folder, stop_at, args.bucket),
        )
        writes = await check_writes(c, run, args.index)
    after = pool_counts(home, args.index)
    expected = dict(before)
    for aid, info in run.added.items():
        if aid not in run.deleted:
            expected[info["pool"]] = expected.get(info["pool"], 0) + info["sentences"]
    return {
        "args": {k: str(v) for k, v in vars(args).items()},
        "minutes": [{k: v for k, v in asdict(b).items() if k != "latencies"} for b in run.buckets],
        "errors_seen": run.errors[:20],
        **verdict(run, writes, after, expected, args.clients + 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", **harness.COMMON["index"])
    ap.add_argument("--home", type=Path, default=harness.ROOT / "indexes")
    ap.add_argument("--model", help="the server's pair model (default: the bundle's)")
    ap.add_argument("--bucket", type=float, default=60.0, help="seconds per row")
    for flag, default in [("--minutes", 60.0), ("--clients", 2), ("--write-every", 5.0),
                          ("--delete-every", 4), ("--cli-every", 20.0), ("--ready-timeout", 900.0),
                          ("--request-timeout", 300.0)]:  # fmt: skip
        ap.add_argument(flag, type=type(default), default=default)
    ap.add_argument("--scratch", type=Path, help="where the copy goes (default: a temp folder)")
    ap.add_argument("--out", type=Path, help="write the figures as JSON here")
    args = ap.parse_args(argv)
    if not (args.home / args.index / "CURRENT").is_file():
        ap.error(f"no index {args.index!r} in {args.home} (make demo builds it)")  # exit 2
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="perspect-soak-"))
    home = scratch / "home"
    folder = copy_index(args.home, args.index, home)
    port = harness.free_port()
    cmd = perspect("serve", "--index", args.index, "--home", str(home), "--port", str(port))
    cmd += ["--model", args.model] if args.model else []
    cmd += ["--time-budget", str(args.request_timeout)]
    with open(scratch / "server.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, start_new_session=True)
    print(f"soak: {args.index} copied to {folder}; server pid {proc.pid} on :{port}", flush=True)
    try:
        got = asyncio.run(soak(args, home, folder, proc, f"http://127.0.0.1:{port}"))
    except SystemExit:
        tail = (scratch / "server.log").read_text(errors="replace")[-2000:]
        print(f"the server's last words:\n{tail}", file=sys.stderr)
        raise
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    print(json.dumps({k: v for k, v in got.items() if k not in ("minutes", "args")}, indent=1))
    harness.write_json(args.out, got)
    for what, ok in got["ok"].items():
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if args.scratch is None:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0 if all(got["ok"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
