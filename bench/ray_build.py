"""Index builds on a Ray cluster beside the embedded build (issue 64): the build's time on 1, 2 and
3 local nodes (one CPU each) against the embedded path, over the same pools, the same models.

    python bench/ray_build.py [--perspectives N] [--evidence N] [--nodes 1,2,3] [--cpus 1]
                              [--retrievers bm25,dense] [--data ../shared/data/perspectrum]

On one machine this measures Ray's overhead and that the cluster path works, not a speed-up:
the local nodes share this machine's cores. Each build writes a fresh index in a temporary home;
the first N perspectives and paragraphs of PERSPECTRUM's pools are indexed with the bundle's
models, the stance states included. Skips with a reason where Ray or the data is missing.
Figures: bench/RESULTS.md ("Builds on a Ray cluster").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def pools(data: Path, n_persp: int, n_ev: int, out: Path):
    from perspect.api import Source

    p = json.loads((data / "perspective_pool_v1.0.json").read_text())[:n_persp]
    e = json.loads((data / "evidence_pool_partial_v1.0.json").read_text())[:n_ev]
    pf, ef = out / "p.json", out / "e.json"
    pf.write_text(json.dumps([{"id": str(x["pId"]), "text": x["text"]} for x in p]))
    ef.write_text(json.dumps([{"id": str(x["eId"]), "text": x["text"]} for x in e]))
    return [Source("perspectives", pf), Source("evidence", ef)]


def news_slice(n_sentences: int, out: Path) -> tuple[object, int]:
    """The first AllSides articles (../shared/data/news) up to `n_sentences` sentences, as a news
    source: a slice of the pool whose whole the dense pass would take hours for (issue 73)."""
    import gzip

    from perspect.api import Source
    from perspect.indexer.news import split_sentences

    path = ROOT.parent / "shared" / "data" / "news" / "allsides_articles.jsonl.gz"
    rows, n = [], 0
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            art = json.loads(line)
            rows.append(line)
            n += len(split_sentences(art["text"]))
            if n >= n_sentences:
                break
    nf = out / "news.jsonl"
    nf.write_text("".join(rows))
    return Source("news", nf), n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--perspectives", type=int, default=1000)
    ap.add_argument("--evidence", type=int, default=500)
    ap.add_argument("--nodes", default="1,2,3")
    ap.add_argument("--retrievers", default="bm25,dense")
    ap.add_argument("--cpus", type=int, default=1, help="CPUs a node offers (one actor each)")
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "perspectrum")
    ap.add_argument("--news", type=int, default=0, help="AllSides sentences to add as news")
    a = ap.parse_args()
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError:
        print("skip: Ray is not installed (pip install 'perspect[ray]')")
        return
    if not (a.data / "perspective_pool_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM pools at {a.data}")
        return
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ.setdefault("PERSPECT_MODELS", str(ROOT / "models"))
    from perspect import api

    work = Path(tempfile.mkdtemp(prefix="ray_bench_"))
    src = pools(a.data, a.perspectives, a.evidence, work)
    if a.news:
        news, n_news = news_slice(a.news, work)
        src.append(news)
        print(f"news: {n_news:,} sentences", flush=True)
    config = api.index_config(a.retrievers.split(","))
    rows = []
    t0 = time.perf_counter()
    api.build_index("embedded", src, home=work / "embedded", config=config)
    embedded = time.perf_counter() - t0
    rows.append(("embedded", embedded))
    print(f"embedded: {embedded:.1f} s", flush=True)
    node = {"num_cpus": a.cpus, "object_store_memory": 200 * 2**20}
    for n in [int(x) for x in a.nodes.split(",")]:
        c = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
        for _ in range(n - 1):
            c.add_node(**node)
        c.wait_for_nodes()
        t0 = time.perf_counter()
        api.build_index(f"ray{n}", src, home=work / f"ray{n}", config=config, ray=c.address)
        took = time.perf_counter() - t0
        rows.append((f"ray, {n} node{'s' if n > 1 else ''} x {a.cpus} CPU", took))
        print(f"ray {n} nodes: {took:.1f} s ({100 * (took / embedded - 1):+.0f} %)", flush=True)
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()
    print(f"\n{a.perspectives} perspectives, {a.evidence} paragraphs, {a.news} news sentences, "
          f"{a.retrievers}, states")  # fmt: skip
    print("| build | seconds | vs embedded |\n|---|---|---|")
    for name, s in rows:
        print(f"| {name} | {s:.1f} | {100 * (s / embedded - 1):+.0f} % |")


if __name__ == "__main__":
    main()
