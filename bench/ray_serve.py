"""Searches on a Ray cluster beside the embedded server (issue 64): `perspect serve --ray` on 1, 2
and 3 local nodes against `perspect serve`, the same index, the same clients.

    python bench/ray_serve.py [--index default] [--home indexes] [--nodes 1,2,3] [--cpus 2]
                              [--clients 8] [--duration 60] [--replicas 1]

Each configuration is a real server process; `--clients` threads each send their next POST
/search when the last is answered, over the claims of bench/load.py, after one warm-up pass of
every claim (so both paths read the judgments the index keeps: the throughput of claims searched
before). The embedded server runs without its idle fill (the cluster path has none), so neither
computes anything between searches. On one machine this measures Ray's overhead and that the
cluster path serves, not a speed-up: the local nodes share this machine's cores. Printed: start-up
time, searches a second, p50 / p95 latency, errors, and the overhead against the embedded server.
Figures: bench/RESULTS.md ("Searches on a Ray cluster"). Skips with a reason without Ray.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from load import CLAIMS, pct  # noqa: E402


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(args, extra: list[str], log: Path) -> tuple[subprocess.Popen, str, float]:
    port = free_port()
    cmd = [str(ROOT / ".venv" / "bin" / "perspect"), "serve", "--index", args.index,
           "--home", args.home, "--port", str(port), "--time-budget", "300", *extra]  # fmt: skip
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    while True:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"{url}/ready", timeout=5).status_code == 200:
                return proc, url, time.perf_counter() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.5)


def load(url: str, clients: int, duration: float) -> dict:
    for claim in CLAIMS:  # the warm-up pass
        r = httpx.post(f"{url}/search", json={"claim": claim}, timeout=300)
        r.raise_for_status()
    took, errors, stop = [], [], threading.Event()

    def client(n: int) -> None:
        with httpx.Client(timeout=300) as http:
            k = n
            while not stop.is_set():
                t0 = time.perf_counter()
                r = http.post(f"{url}/search", json={"claim": CLAIMS[k % len(CLAIMS)]})
                (took if r.status_code == 200 else errors).append(time.perf_counter() - t0)
                k += 1

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(duration)
    stop.set()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    ms = [1000 * x for x in took]
    return {"rate": len(took) / wall, "p50": statistics.median(ms) if ms else float("nan"),
            "p95": pct(ms, 95), "errors": len(errors), "n": len(took)}  # fmt: skip


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=str(ROOT / "indexes"))
    ap.add_argument("--nodes", default="1,2,3")
    ap.add_argument("--cpus", type=int, default=2, help="logical CPUs a node")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--replicas", type=int, default=1)
    args = ap.parse_args()
    try:
        from ray.cluster_utils import Cluster
    except ImportError:
        print("skipped: Ray is not installed (pip install 'perspect[ray]')")
        return 0
    logs = Path(tempfile.mkdtemp(prefix="ray-serve-bench-"))
    rows = []
    proc, url, up = serve(args, ["--no-idle-fill"], logs / "embedded.log")
    try:
        rows.append(("embedded (perspect serve)", up, load(url, args.clients, args.duration)))
    finally:
        stop(proc)
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    for n in [int(x) for x in args.nodes.split(",")]:
        node = {"num_cpus": args.cpus, "object_store_memory": 200 * 2**20}
        c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
        for _ in range(n - 1):
            c.add_node(**node)
        c.wait_for_nodes()
        try:
            extra = ["--ray", c.address, "--shards", str(n), "--replicas", str(args.replicas)]
            proc, url, up = serve(args, extra, logs / f"ray-{n}.log")
            try:
                rows.append((f"Ray, {n} node(s), {n} shard(s)", up, load(url, args.clients,
                                                                          args.duration)))  # fmt: skip
            finally:
                stop(proc)
        finally:
            c.shutdown()
    base = rows[0][2]["rate"]
    print(f"\n{args.clients} clients, {args.duration:g} s each, index {args.index!r}; "
          f"{os.cpu_count()} cores; logs in {logs}\n")  # fmt: skip
    print("| server | ready after s | searches/s | p50 ms | p95 ms | errors | vs embedded |")
    print("|---|---|---|---|---|---|---|")
    for name, up, r in rows:
        vs = "" if r is rows[0][2] else f"{100 * (base / r['rate'] - 1):+.0f} % time a search"
        print(f"| {name} | {up:.0f} | {r['rate']:.2f} | {r['p50']:,.0f} | {r['p95']:,.0f} | "
              f"{r['errors']} | {vs} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
