"""What a Ray cluster costs beside the embedded path (issue 64): index builds and searches.

    python -m bench ray build [--perspectives N] [--evidence N] [--news N] [--nodes 1,2,3]
                              [--cpus 1] [--retrievers bm25,dense] [--data DIR]
    python -m bench ray serve [--index default] [--home indexes] [--nodes 1,2,3] [--cpus 2]
                              [--clients 8] [--duration 60] [--replicas 1]

On one machine both measure Ray's overhead and that the cluster path works, not a speed-up: the
local nodes share this machine's cores. Each skips with a reason where Ray or the data is missing.

`build`: the build's time on 1, 2 and 3 local nodes (one CPU each) against the embedded build,
over the same pools and models. Each build writes a fresh index in a temporary home; the first N
perspectives and paragraphs of PERSPECTRUM's pools are indexed with the bundle's models, the
stance states included; `--news N` adds the first AllSides articles up to N sentences. Figures:
bench/RESULTS.md ("Builds on a Ray cluster").

`serve`: `perspect serve --ray` on 1, 2 and 3 local nodes against `perspect serve`, the same
index, the same clients. Each configuration is a real server process; `--clients` threads each
send their next POST /search when the last is answered, over the claims of bench/load.py, after
one warm-up pass of every claim (so both paths read the judgments the index keeps: the throughput
of claims searched before). The embedded server runs without its idle fill (the cluster path has
none), so neither computes anything between searches. Printed: start-up time, searches a second,
p50 / p95 latency, errors, and the overhead against the embedded server. Figures:
bench/RESULTS.md ("Searches on a Ray cluster").
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# run as `python bench/ray.py`, this folder is first on the path and `import ray` would find this
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))
from bench import harness  # noqa: E402
from bench.harness import Timing, table, timed  # noqa: E402

NODE_STORE = 200 * 2**20  # the object store a local node gets


def _cluster(n: int, cpus: int):
    """A local Ray cluster of `n` nodes offering `cpus` CPUs each, its nodes up."""
    from ray.cluster_utils import Cluster

    node = {"num_cpus": cpus, "object_store_memory": NODE_STORE}
    c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    for _ in range(n - 1):
        c.add_node(**node)
    c.wait_for_nodes()
    return c


def _no_ray() -> bool:
    """True after a skip line where Ray is not installed."""
    try:
        import ray  # noqa: F401
    except ImportError:
        print("skip: Ray is not installed (pip install 'perspect[ray]')")
        return True
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    return False


# ---- build -------------------------------------------------------------------------------------


def _pools(data: Path, n_persp: int, n_ev: int, out: Path) -> list:
    from perspect.api import Source

    p = json.loads((data / "perspective_pool_v1.0.json").read_text())[:n_persp]
    e = json.loads((data / "evidence_pool_partial_v1.0.json").read_text())[:n_ev]
    pf, ef = out / "p.json", out / "e.json"
    pf.write_text(json.dumps([{"id": str(x["pId"]), "text": x["text"]} for x in p]))
    ef.write_text(json.dumps([{"id": str(x["eId"]), "text": x["text"]} for x in e]))
    return [Source("perspectives", pf), Source("evidence", ef)]


def _news_slice(n_sentences: int, out: Path) -> tuple[object, int]:
    """The first AllSides articles (../shared/data/news) up to `n_sentences` sentences, as a news
    source: a slice of the pool whose whole the dense pass would take hours for (issue 73)."""
    import gzip

    from perspect.api import Source
    from perspect.indexer.news import split_sentences

    rows, n = [], 0
    with gzip.open(harness.SHARED / "news" / "allsides_articles.jsonl.gz", "rt") as f:
        for line in f:
            rows.append(line)
            n += len(split_sentences(json.loads(line)["text"]))
            if n >= n_sentences:
                break
    nf = out / "news.jsonl"
    nf.write_text("".join(rows))
    return Source("news", nf), n


def build(args) -> int:
    """Index builds on 1-3 local Ray nodes against the embedded build: seconds, overhead."""
    if _no_ray():
        return 0
    import ray

    if not harness.have_perspectrum(args.data):
        return 0
    os.environ.setdefault("PERSPECT_MODELS", str(harness.ROOT / "models"))
    from perspect import api

    work = Path(tempfile.mkdtemp(prefix="ray_bench_"))
    src = _pools(args.data, args.perspectives, args.evidence, work)
    if args.news:
        news, n_news = _news_slice(args.news, work)
        src.append(news)
        print(f"news: {n_news:,} sentences", flush=True)
    config = api.index_config(args.retrievers.split(","))
    ms, _ = timed(lambda: api.build_index("embedded", src, home=work / "embedded", config=config))
    embedded = ms / 1000
    rows = [("embedded", embedded)]
    print(f"embedded: {embedded:.1f} s", flush=True)
    for n in [int(x) for x in args.nodes.split(",")]:
        c = _cluster(n, args.cpus)
        ms, _ = timed(
            lambda n=n, c=c: api.build_index(
                f"ray{n}", src, home=work / f"ray{n}", config=config, ray=c.address
            )
        )
        took = ms / 1000
        rows.append((f"ray, {n} node{'s' if n > 1 else ''} x {args.cpus} CPU", took))
        print(f"ray {n} nodes: {took:.1f} s ({100 * (took / embedded - 1):+.0f} %)", flush=True)
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
    print(f"\n{args.perspectives} perspectives, {args.evidence} paragraphs, {args.news} news "
          f"sentences, {args.retrievers}, states\n")  # fmt: skip
    cells = [[name, f"{s:.1f}", f"{100 * (s / embedded - 1):+.0f} %"] for name, s in rows]
    print(table(["build", "seconds", "vs embedded"], cells))
    return 0


def _build_args(p) -> None:
    p.add_argument("--perspectives", type=int, default=1000, help="first N of the pool")
    p.add_argument("--evidence", type=int, default=500, help="first N paragraphs")
    p.add_argument("--news", type=int, default=0, help="AllSides sentences to add as news")
    p.add_argument("--nodes", default="1,2,3", help="cluster sizes, one build each")
    p.add_argument("--cpus", type=int, default=1, help="CPUs a node offers (one actor each)")
    p.add_argument("--retrievers", default="bm25,dense")


# ---- serve -------------------------------------------------------------------------------------


def _serve(args, extra: list[str], log: Path) -> tuple[subprocess.Popen, str, float]:
    """A `perspect serve` process, its URL and the seconds until it answered /ready."""
    port = harness.free_port()
    home = args.home or os.environ.get("PERSPECT_HOME") or harness.ROOT / "indexes"
    cmd = [str(harness.ROOT / ".venv" / "bin" / "perspect"), "serve", "--index", args.index,
           "--home", str(home), "--port", str(port), "--time-budget", "300", *extra]  # fmt: skip
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    return proc, url, harness.wait_ready(url, proc, timeout=3600, log=log)


def _load(url: str, clients: int, duration: float) -> dict:
    """Searches a second, Timing (ms) and errors of `clients` closed-loop clients."""
    import httpx

    from bench.load import CLAIMS  # the claims the figures in RESULTS.md were measured on

    for claim in CLAIMS:  # the warm-up pass
        httpx.post(f"{url}/search", json={"claim": claim}, timeout=300).raise_for_status()
    took, errors, stop = [], [], threading.Event()

    def client(n: int) -> None:
        with httpx.Client(timeout=300) as http:
            k = n
            while not stop.is_set():
                claim = {"claim": CLAIMS[k % len(CLAIMS)]}
                ms, r = timed(lambda c=claim: http.post(f"{url}/search", json=c))
                (took if r.status_code == 200 else errors).append(ms)
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
    return {"rate": len(took) / wall, "timing": Timing.of(took), "errors": len(errors)}


def _stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def _measured(args, extra: list[str], log: Path) -> tuple[float, dict]:
    """(seconds to ready, load figures) of one server, stopped after."""
    proc, url, up = _serve(args, extra, log)
    try:
        return up, _load(url, args.clients, args.duration)
    finally:
        _stop(proc)


def serve(args) -> int:
    """Searches on 1-3 local Ray nodes against the embedded server: rate, p50 / p95, overhead."""
    if _no_ray():
        return 0
    logs = Path(tempfile.mkdtemp(prefix="ray-serve-bench-"))
    rows = [("embedded (perspect serve)", *_measured(args, ["--no-idle-fill"], logs / "emb.log"))]
    for n in [int(x) for x in args.nodes.split(",")]:
        c = _cluster(n, args.cpus)
        try:
            extra = ["--ray", c.address, "--shards", str(n), "--replicas", str(args.replicas)]
            rows.append((f"Ray, {n} node(s), {n} shard(s)",
                         *_measured(args, extra, logs / f"ray-{n}.log")))  # fmt: skip
        finally:
            c.shutdown()
    base = rows[0][2]["rate"]
    print(f"\n{args.clients} clients, {args.duration:g} s each, index {args.index!r}; "
          f"{os.cpu_count()} cores; logs in {logs}\n")  # fmt: skip
    cells = []
    for i, (name, up, r) in enumerate(rows):
        vs = f"{100 * (base / r['rate'] - 1):+.0f} % time a search" if i else ""
        t = r["timing"]
        cells.append([name, f"{up:.0f}", f"{r['rate']:.2f}", f"{t.p50:,.0f}", f"{t.p95:,.0f}",
                      r["errors"], vs])  # fmt: skip
    heads = "server|ready after s|searches/s|p50 ms|p95 ms|errors|vs embedded".split("|")
    print(table(heads, cells))
    return 0


def _serve_args(p) -> None:
    p.add_argument("--nodes", default="1,2,3", help="cluster sizes (one shard a node)")
    p.add_argument("--cpus", type=int, default=2, help="logical CPUs a node")
    p.add_argument("--clients", type=int, default=8, help="closed-loop clients at once")
    p.add_argument("--duration", type=float, default=60, help="seconds of load a server")
    p.add_argument("--replicas", type=int, default=1, help="pipeline replicas on the cluster")


def main(argv: list[str] | None = None) -> int:
    return harness.commands(
        __doc__,
        {
            "build": (build, ["data"], _build_args),
            "serve": (serve, ["index", "home"], _serve_args),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
