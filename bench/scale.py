"""How far one machine goes: the embedded retrievers on news pools of 10k, 100k and 1M sentences.

    python bench/scale.py [--sizes 10k,100k,1m] [--retrievers bm25,dense,colbert] [--queries 60]
                          [--encode 10000] [--work DIR]

Per pool size and retriever: build time, disk, peak memory (each build in its own process, its
ru_maxrss) and warm query p50 / p95 (PERSPECTRUM dev claims as queries, top 100, query encoding
included), printed as one table for the README and docs/scale-out.md.

Sentences are real: ClaimDiff's article sentences, the evidence paragraphs split into sentences and
the perspectives. Encoding 1M sentences on 2 cores would take hours, so `--encode` sentences are
encoded once (the dense and the ColBERT encoders are timed: that throughput is the other number a
deployment needs) and a pool of N sentences cycles through them: each copy's text has two words
swapped for random words of the corpus (BM25 sees distinct documents), and its vectors are the
original's plus small Gaussian noise (dense: cosine ~.95 to the original; ColBERT: each token
vector likewise), renormalised. The output says so. Indexes are built in `--work` (default: a
temporary folder) and removed after each measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.core.perspectrum import load_claims  # noqa: E402
from perspect.core.types import Item  # noqa: E402

DATA = ROOT / "data"
DENSE_NOISE = 0.015  # per dimension, 384-d unit vectors: cosine ~.95 to the original
COLBERT_NOISE = 0.02  # per dimension, 128-d token vectors
CHUNK = 50_000


def parse_size(s: str) -> int:
    s = s.strip().lower()
    mult = {"k": 1_000, "m": 1_000_000}.get(s[-1], 1)
    return int(float(s[:-1] if s[-1] in "km" else s) * mult)


def corpus(limit: int | None = None) -> list[str]:
    """Distinct real sentences: ClaimDiff articles, evidence paragraphs, perspectives."""
    from perspect.indexer.news import split_sentences

    out: dict[str, None] = {}
    arts = DATA / "claimdiff" / "claimdiff_train_articles.jsonl"
    if arts.is_file():
        for line in arts.read_text().splitlines():
            for s in split_sentences(json.loads(line)["text"]):
                out.setdefault(s.strip(), None)
    ev = DATA / "perspectrum" / "evidence_pool_partial_v1.0.json"
    if ev.is_file():
        for e in json.loads(ev.read_text()):
            for s in split_sentences(e["text"]):
                out.setdefault(s.strip(), None)
    pp = DATA / "perspectrum" / "perspective_pool_v1.0.json"
    if pp.is_file():
        for p in json.loads(pp.read_text()):
            out.setdefault(p["text"].strip(), None)
    texts = [t for t in out if 20 <= len(t) <= 400]
    random.Random(7).shuffle(texts)
    return texts[:limit]


def synthetic_texts(base: list[str], start: int, stop: int) -> list[str]:
    """Sentences start..stop of a pool: base sentence i % len(base) with two words replaced by
    words of other base sentences (deterministic in i)."""
    words = [w for t in base[:2000] for w in t.split()]
    out = []
    for i in range(start, stop):
        rng = random.Random(i)
        toks = base[i % len(base)].split()
        if i >= len(base):
            for _ in range(2):
                toks[rng.randrange(len(toks))] = rng.choice(words)
        out.append(" ".join(toks))
    return out


def noisy(v: np.ndarray, i: int, sigma: float, n_base: int) -> np.ndarray:
    if i < n_base:
        return v
    rng = np.random.default_rng(i)
    w = v.astype(np.float32) + rng.normal(0, sigma, v.shape).astype(np.float32)
    return w / np.linalg.norm(w, axis=-1, keepdims=True)


# -- the parent: base encodings, one child per (size, retriever), the table ------------------------
def encode_base(work: Path, n: int, retrievers: list[str]) -> dict[str, float]:
    """Encode the first `n` corpus sentences once per encoder (saved in `work`); sentences/s."""
    texts = corpus(n)
    (work / "base.json").write_text(json.dumps(texts))
    speed = {}
    if "dense" in retrievers:
        from perspect.retriever.dense import DenseBackend, encode

        b = DenseBackend(work / "enc-dense", {})
        t0 = time.perf_counter()
        v = encode(b.model, texts)
        speed["dense"] = len(texts) / (time.perf_counter() - t0)
        np.save(work / "base_dense.npy", v)
    if "colbert" in retrievers:
        from perspect.retriever import colbert

        model = str(colbert.default_model())
        b = colbert.ColBERTBackend(
            work / "enc-colbert",
            {},
            {"model": model, "model_fingerprint": colbert.model_fingerprint(model)},
        )
        t0 = time.perf_counter()
        embs = b.encode(texts, is_query=False)
        speed["colbert"] = len(texts) / (time.perf_counter() - t0)
        lens = np.array([len(e) for e in embs])
        np.save(work / "base_colbert.npy", np.concatenate(embs).astype(np.float16))
        np.save(work / "base_colbert_lens.npy", lens)
    return speed


def child(size: int, kind: str, work: Path, queries: list[str]) -> dict:
    """Build one pool of `size` sentences with one retriever and measure it (own process)."""
    base = json.loads((work / "base.json").read_text())
    n_base = len(base)
    folder = work / f"{kind}-{size}"
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.perf_counter()
    if kind == "bm25":
        from perspect.retriever.bm25 import TantivyBM25

        b = TantivyBM25.create(folder, {})
        for s in range(0, size, CHUNK):
            texts = synthetic_texts(base, s, min(size, s + CHUNK))
            b.add([Item(f"n{s + j}", t) for j, t in enumerate(texts)])
    elif kind == "dense":
        from perspect.retriever.dense import DenseBackend

        vb = np.load(work / "base_dense.npy")
        b = DenseBackend.create(folder, {})
        b.index  # noqa: B018  (loads the encoder for its dimension: not part of the build)
        t0 = time.perf_counter()
        for s in range(0, size, CHUNK):
            rows = range(s, min(size, s + CHUNK))
            v = np.stack([noisy(vb[i % n_base], i, DENSE_NOISE, n_base) for i in rows])
            b.add_encoded([f"n{i}" for i in rows], v)
    else:
        from perspect.retriever.colbert import ColBERTBackend

        flat = np.load(work / "base_colbert.npy")
        lens = np.load(work / "base_colbert_lens.npy")
        offs = np.concatenate([[0], np.cumsum(lens)])
        docs = [
            # float16: PLAID stores them so anyway (its indexer casts), and 1M documents fit
            noisy(flat[offs[i % n_base] : offs[i % n_base + 1]], i, COLBERT_NOISE, n_base).astype(
                np.float16
            )
            for i in range(size)
        ]
        b = ColBERTBackend.create(folder, {})
        b.add_encoded([f"n{i}" for i in range(size)], docs)
        del docs
    b.commit()
    build = time.perf_counter() - t0
    b.close()
    disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    cls = type(b)
    r = cls.open(folder, {})
    r.search(queries[0], 100)  # warm: models, sessions, kernels, caches
    times = []
    for q in queries:
        t = time.perf_counter()
        r.search(q, 100)
        times.append((time.perf_counter() - t) * 1000)
    r.close()
    shutil.rmtree(folder, ignore_errors=True)
    times.sort()
    return {
        "size": size,
        "retriever": kind,
        "build_s": round(build, 1),
        "disk_mb": round(disk / 1e6, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10k,100k,1m")
    ap.add_argument("--retrievers", default="bm25,dense,colbert")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--encode", type=int, default=10_000, help="sentences encoded for real")
    ap.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--timeout", type=float, default=5400, help="seconds per build (then: skip)")
    ap.add_argument("--child", nargs=2, metavar=("SIZE", "RETRIEVER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not (DATA / "perspectrum" / "dataset_split_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {DATA / 'perspectrum'} (make data)")
        return 0
    queries = [c.text for c in load_claims(DATA / "perspectrum", "dev")][: args.queries]
    if args.child:
        got = child(parse_size(args.child[0]), args.child[1], Path(args.work), queries)
        print("RESULT " + json.dumps(got), flush=True)
        return 0
    kinds = [k.strip() for k in args.retrievers.split(",") if k.strip()]
    sizes = [parse_size(s) for s in args.sizes.split(",")]
    work = Path(args.work or tempfile.mkdtemp(prefix="perspect-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    speed = encode_base(work, args.encode, kinds)
    base_n = len(json.loads((work / "base.json").read_text()))
    print(
        f"# Scale of the embedded retrievers ({os.cpu_count()} CPUs), news pools built from "
        f"{base_n:,} real sentences encoded once (copies: two words swapped, vectors + Gaussian "
        f"noise, cosine ~.95)\n"
    )
    for k, v in speed.items():
        print(
            f"encoding throughput, {k}: {v:,.0f} sentences/s here -> 1M sentences in "
            f"{1e6 / v / 3600:.1f} h"
        )
    print(f"(base encoding took {time.perf_counter() - t0:.0f} s)\n", flush=True)
    print("| sentences | retriever | build s | disk MB | peak RSS MB | query p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|---|", flush=True)
    for size in sizes:
        for kind in kinds:
            cmd = [sys.executable, __file__, "--child", str(size), kind, "--work", str(work)]
            cmd += ["--queries", str(args.queries)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                print(f"| {size:,} | {kind} | > {args.timeout:.0f} (stopped) | | | | |", flush=True)
                continue
            line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                why = (p.stderr.strip().splitlines() or ["no output"])[-1][:120]
                print(f"| {size:,} | {kind} | failed: {why} | | | | |", flush=True)
                continue
            r = json.loads(line[7:])
            print(
                f"| {size:,} | {kind} | {r['build_s']:,.1f} | {r['disk_mb']:,.1f} | "
                f"{r['peak_rss_mb']:,} | {r['p50_ms']} | {r['p95_ms']} |",
                flush=True,
            )
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
