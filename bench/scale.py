"""How far one machine goes: the embedded retrievers on news pools of 10k, 100k and 1M sentences.

    python bench/scale.py [--sizes 10k,100k,1m] [--retrievers bm25,dense,colbert] [--queries 60]
                          [--encode 10000] [--work DIR] [--ann 1m [--hnsw]]

Per pool size and retriever: build time, disk, peak memory (each build in its own process, its
ru_maxrss) and warm query p50 / p95 (PERSPECTRUM dev claims as queries, top 100, query encoding
included), printed as one table for docs/scale-out.md. `dense` is the backend as
shipped (flat under its `ann_min`, IVF-Flat past it); `dense-flat` keeps it exact at any size.

`--ann SIZE` adds the dense index table at one pool size (own process): exact flat against the
backend's IVF-Flat (and faiss HNSW with `--hnsw`): build time, index file size and the RSS it adds
when opened, recall@10 against flat and per-query p50 / p95, of the faiss index alone (top 100,
query vectors ready) and through the backend (query encoding included). Recall and the index-alone
times use `--ann-queries` PERSPECTRUM claims (dev, then train), the backend times `--queries`.

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
from bench import harness  # noqa: E402
from perspect.core.datasets.perspectrum import load_claims  # noqa: E402
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


def dense_rows(vb: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Vectors start..stop of a pool cycling through the base vectors `vb` (copies noisy)."""
    return np.stack([noisy(vb[i % len(vb)], i, DENSE_NOISE, len(vb)) for i in range(start, stop)])


def open_rss_mb(path: Path) -> float:
    """Resident memory a fresh process gains by reading the faiss index at `path` (in this
    process freed build memory would be reused and hide it)."""
    code = (
        "import faiss, re\n"
        "def rss(): return int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read())[1])\n"
        f"a = rss(); i = faiss.read_index({str(path)!r}); print(rss() - a)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def _pct(times: list[float], q: float) -> float:
    return round(harness.pct(times, q), 1)


# -- the parent: base encodings, one child per (size, retriever), the table ------------------------
def encode_base(work: Path, n: int, retrievers: list[str]) -> dict[str, float]:
    """Encode the first `n` corpus sentences once per encoder (saved in `work`); sentences/s."""
    texts = corpus(n)
    speed: dict[str, float] = {}
    dense = any(k.startswith("dense") for k in retrievers)
    same = (work / "base.json").is_file() and json.loads((work / "base.json").read_text()) == texts
    if dense and "colbert" not in retrievers and same and (work / "base_dense.npy").is_file():
        print("(base vectors reused from --work: no encoding throughput this run)")
        return speed  # a rerun in the same --work
    (work / "base.json").write_text(json.dumps(texts))
    if dense:
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
    elif kind in ("dense", "dense-flat"):
        from perspect.retriever.dense import DenseBackend

        vb = np.load(work / "base_dense.npy")
        b = DenseBackend.create(folder, {"ann_min": 10**12} if kind == "dense-flat" else {})
        b.index  # noqa: B018  (loads the encoder for its dimension: not part of the build)
        t0 = time.perf_counter()
        for s in range(0, size, CHUNK):
            rows = range(s, min(size, s + CHUNK))
            b.add_encoded([f"n{i}" for i in rows], dense_rows(vb, s, rows.stop))
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
    if kind == "dense":
        kind = f"dense ({r.index_kind})"
    return {
        "size": size,
        "retriever": kind,
        "build_s": round(build, 1),
        "disk_mb": round(disk / 1e6, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], 1),
    }


def ann_child(size: int, work: Path, queries: list[str], ann_queries: list[str], hnsw: bool):
    """Flat vs the backend's IVF-Flat (vs faiss HNSW) over one pool of `size` vectors."""
    import faiss

    from perspect.retriever import ann
    from perspect.retriever.dense import DenseBackend

    vb = np.load(work / "base_dense.npy")
    vecs = np.concatenate([dense_rows(vb, s, min(size, s + CHUNK)) for s in range(0, size, CHUNK)])
    qv = DenseBackend(work / "enc-q", {}).embed_queries(ann_queries)
    rows, truth = [], None

    def measure(name: str, index, build_s: float, path: Path, backend=None):
        nonlocal truth
        file_mb, open_mb = path.stat().st_size / 1e6, open_rss_mb(path)
        index.search(qv[:1], 100)  # warm
        times, top = [], []
        for i in range(len(qv)):
            t = time.perf_counter()
            _, got = index.search(qv[i : i + 1], 100)
            times.append((time.perf_counter() - t) * 1000)
            top.append(got[0][:10])
        if truth is None:
            truth = top
        recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, truth, strict=True)])
        full = []
        if backend is not None:
            backend.search(queries[0], 100)
            for q in queries:
                t = time.perf_counter()
                backend.search(q, 100)
                full.append((time.perf_counter() - t) * 1000)
        rows.append(
            {
                "index": name,
                "build_s": round(build_s, 1),
                "file_mb": round(file_mb),
                "open_rss_mb": round(open_mb),
                "recall10": round(float(recall), 3),
                "p50": _pct(times, 0.5),
                "p95": _pct(times, 0.95),
                "full_p50": _pct(full, 0.5) if full else None,
                "full_p95": _pct(full, 0.95) if full else None,
            }
        )
        print("ROW " + json.dumps(rows[-1]), flush=True)

    for name, cfg in (("flat", {"ann_min": 10**12}), ("ivf", {"ann_min": 1})):  # IVF at any size
        folder = work / f"ann-{name}"
        shutil.rmtree(folder, ignore_errors=True)
        t0 = time.perf_counter()
        b = DenseBackend.create(folder, cfg)
        for s in range(0, size, CHUNK):
            b.add_encoded([f"n{i}" for i in range(s, min(size, s + CHUNK))], vecs[s : s + CHUNK])
        b.commit()
        build = time.perf_counter() - t0
        del b
        r = DenseBackend.open(folder, {})
        index = r.index
        label = f"{name}: nlist {index.nlist}, nprobe {index.nprobe}" if name == "ivf" else name
        assert ann.kind_of(index) == name
        measure(label, index, build, folder / "vectors.faiss", r)
        if name == "ivf":  # what the nprobe knob buys: the same index, fewer or more lists
            default = index.nprobe
            for nprobe in (16, 32, 128):
                index.nprobe = nprobe
                measure(f"ivf: nprobe {nprobe}", index, build, folder / "vectors.faiss")
            index.nprobe = default
        del r, index
        shutil.rmtree(folder, ignore_errors=True)
    if hnsw:
        t0 = time.perf_counter()
        index = faiss.IndexHNSWFlat(vecs.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 40
        index.add(vecs)
        build = time.perf_counter() - t0
        faiss.write_index(index, str(work / "hnsw.faiss"))
        for ef in (128, 256, 512):  # faiss searches with max(efSearch, k = 100)
            index.hnsw.efSearch = ef
            name = f"hnsw: M 32, efConstruction 40, efSearch {ef}"
            measure(name, index, build, work / "hnsw.faiss")
        (work / "hnsw.faiss").unlink()
    return rows


def ann_table(args, work: Path) -> None:
    cmd = [sys.executable, __file__, "--ann-child", args.ann, "--work", str(work)]
    cmd += ["--queries", str(args.queries), "--ann-queries", str(args.ann_queries)]
    cmd += ["--hnsw"] if args.hnsw else []
    print(
        f"\n## Dense index at {parse_size(args.ann):,} vectors: exact flat vs ANN "
        f"(recall@10 against flat over {args.ann_queries} claims; p50/p95 of one query, top 100)\n"
    )
    print(
        "| index | build s | file MB | RSS when opened MB | recall@10 vs flat | "
        "index alone p50 ms | p95 ms | backend p50 ms | p95 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|", flush=True)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        out, err = p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        out, err = (e.stdout or b"").decode(), "stopped after the timeout"
    got = [json.loads(x[4:]) for x in out.splitlines() if x.startswith("ROW ")]
    for r in got:
        print(
            f"| {r['index']} | {r['build_s']:,.1f} | {r['file_mb']:,} | {r['open_rss_mb']:,} | "
            f"{r['recall10']:.3f} | {r['p50']} | {r['p95']} | {r['full_p50'] or '-'} | "
            f"{r['full_p95'] or '-'} |",
            flush=True,
        )
    if not any("hnsw" in r["index"] for r in got) and (args.hnsw or len(got) < 2):
        print(f"(incomplete: {(err.strip().splitlines() or ['no output'])[-1][:160]})")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10k,100k,1m")
    ap.add_argument("--retrievers", default="bm25,dense,colbert")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--encode", type=int, default=10_000, help="sentences encoded for real")
    ap.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--timeout", type=float, default=5400, help="seconds per build (then: skip)")
    ap.add_argument("--ann", default=None, metavar="SIZE", help="dense flat vs ANN at SIZE")
    ap.add_argument("--hnsw", action="store_true", help="with --ann: faiss HNSW too (slow build)")
    ap.add_argument("--ann-queries", type=int, default=500, help="claims for recall@10")
    ap.add_argument("--child", nargs=2, metavar=("SIZE", "RETRIEVER"), help=argparse.SUPPRESS)
    ap.add_argument("--ann-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not (DATA / "perspectrum" / "dataset_split_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {DATA / 'perspectrum'} (make data)")
        return 0
    dev = [c.text for c in load_claims(DATA / "perspectrum", "dev")]
    queries = dev[: args.queries]
    if args.child:
        got = child(parse_size(args.child[0]), args.child[1], Path(args.work), queries)
        print("RESULT " + json.dumps(got), flush=True)
        return 0
    if args.ann_child:
        train = [c.text for c in load_claims(DATA / "perspectrum", "train")]
        many = (dev + train)[: args.ann_queries]
        ann_child(parse_size(args.ann_child), Path(args.work), queries, many, args.hnsw)
        return 0
    kinds = [k.strip() for k in args.retrievers.split(",") if k.strip()]
    if args.ann and "dense" not in kinds:
        kinds.append("dense")  # the ANN table reuses the dense base encoding
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
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
    if sizes:
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
                f"| {size:,} | {r['retriever']} | {r['build_s']:,.1f} | {r['disk_mb']:,.1f} | "
                f"{r['peak_rss_mb']:,} | {r['p50_ms']} | {r['p95_ms']} |",
                flush=True,
            )
    if args.ann:
        ann_table(args, work)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
