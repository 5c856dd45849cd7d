"""What building and writing an index costs: stages, BM25, ColBERT builds and updates, `index add`.

    python -m bench build stages [--index default] [--home indexes]
    python -m bench build bm25 [--data ../shared/data/perspectrum] [--kmax 50]
    python -m bench build colbert [--data DIR] [--colbert-model models/colbert] [--limit N]
    python -m bench build delta [--data DIR] [--colbert-model models/colbert] [--limit N]
    python -m bench build add [--index default] [--home indexes] [--articles 10] [--runs 2]
                              [--baseline-tree DIR]

`stages`: every write (build, add, delete, rebuild) keeps the wall-clock start and length of each
of its stages in the version's manifest ("stages", written by perspect.core.progress.Timed).
Stages on the build's second thread (the stance states beside the other pools' encoders) overlap
the others, so the lengths add up to more than the write: "busy" says how many stages were
running during each one's span, on average.

`bm25`: for the perspective pool (11,112) and the evidence pool, build time, items/s, on-disk
size, queries/s and p50/p95 (warm, one query at a time, through the public `Perspect` API); and
the PERSPECTRUM T1 IR baseline on dev (section 5.2: per-claim precision of the returned
perspectives and recall over gold clusters, averaged over claims, F1 of the averages), the top-k
cut-off tuned on dev: that makes the dev F1 optimistic; the chosen k is what a test would use.

`colbert`: the evidence pool's paragraphs are encoded once (timed, float32, and int8 dynamic
quantization of the encoder's linear layers as an alternative); each index variant is built from
the same vectors (timed, peak memory growth) and scored on PERSPECTRUM dev with claim +
perspective queries for their resolvable gold evidence: recall@k and warm query p50. Variants:
PLAID with 4 k-means iterations (the default before), with 2, and exact MaxSim over every stored
token vector (no k-means: what a pool below `min_plaid_docs` documents gets).

`delta`: the perspective pool is encoded once; a full PLAID build is the reference. Each variant
builds PLAID over part of the pool and adds the rest as later writes would: new documents to the
exact delta, replaced ones as a tombstone in PLAID plus a delta copy. Scored on dev claims against
their gold perspectives (recall@k), and by how much of the full build's top 10 each returns.

`add`: `perspect index add --news` of PolitiFact rulings from PolitiHop's validation split
(`../shared/data/politihop`: real articles, 20-60 sentences each, none in the demo index) to a
copy of the index: wall and CPU time of the command, bytes of new files its version wrote (what
it does not share with the version before). Each run copies the index afresh for each code (this
checkout, and `--baseline-tree`'s: `python -m bench harness --make DIR`); they take turns, so a
busy machine slows both alike.
"""

from __future__ import annotations

import csv
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
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import harness
from bench.harness import Timing, table, timed

KS = (10, 20, 60)  # recall@k of the ColBERT variants
QUIET = {"capture_output": True, "text": True}


def _home(args) -> Path:
    """--home, else $PERSPECT_HOME, else this checkout's indexes (the old benches' default)."""
    return Path(args.home or os.environ.get("PERSPECT_HOME") or harness.ROOT / "indexes")


def _rss_mib() -> float:  # this process's peak
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _du(path: Path) -> int:  # bytes on disk under `path`
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# ---- stages ------------------------------------------------------------------------------------


def _overlap(rows: list[dict], row: dict) -> float:
    """How many stages ran, on average, through `row`'s span (itself included)."""
    a, b = row["start_s"], row["start_s"] + row["seconds"]
    if b <= a:
        return 1.0
    total = sum(max(0.0, min(b, r["start_s"] + r["seconds"]) - max(a, r["start_s"])) for r in rows)
    return total / (b - a)


def stages(args) -> int:
    """Where an index's last write spent its time: the stages its manifest records, in order."""
    folder = _home(args) / args.index
    try:
        live = (folder / "CURRENT").read_text().strip()
        manifest = json.loads((folder / "versions" / live / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        print(f"error: cannot read the live manifest of {folder}: {e}", file=sys.stderr)
        return 2
    rows = sorted(manifest.get("stages", []), key=lambda r: r["start_s"])
    if not rows:
        print(f"error: {live} records no stages (written before they were kept)", file=sys.stderr)
        return 2
    op = (manifest.get("operations") or [{"op": "build"}])[-1].get("op", "?")
    end = max(r["start_s"] + r["seconds"] for r in rows)
    print(f"{args.index} {live} ({op}): {end:.0f} s from its first stage to its last\n")
    share = lambda r: f"{100 * r['seconds'] / end if end else 0:.0f} %"  # noqa: E731
    cells = [[f"{r['start_s']:.1f}", f"{r['seconds']:.1f}", share(r), f"{_overlap(rows, r):.1f}",
              r["stage"]] for r in rows]  # fmt: skip
    print(table(["start", "seconds", "share", "busy", "stage"], cells))
    return 0


# ---- bm25 --------------------------------------------------------------------------------------


def bm25(args) -> int:
    """BM25 on PERSPECTRUM: build throughput, index size, query latency, the T1 IR baseline."""
    if not harness.have_perspectrum(args.data):
        return 0
    from perspect import Perspect
    from perspect.core.datasets.fetch import evidence_pool_file
    from perspect.core.datasets.metrics import claim_pr, macro
    from perspect.core.datasets.perspectrum import load_claims, load_perspectives
    from perspect.indexer.indexer import Indexer, Source

    data = Path(args.data)
    dev = load_claims(data, "dev")
    pool_text = load_perspectives(data)
    home = Path(tempfile.mkdtemp(prefix="perspect-bench-"))
    claim_queries = [c.text for c in dev]
    evid_queries = [f"{c.text} {pool_text[cl.pids[0]]}" for c in dev for cl in c.clusters]
    rows = []
    for pool, path, queries, k in (
        ("perspectives", data / "perspective_pool_v1.0.json", claim_queries, 50),
        ("evidence", evidence_pool_file(data), evid_queries, 60),
    ):
        if path is None:
            continue
        # perspectives: a full build; evidence: an incremental add to the live index (copy-on-write)
        ix = Indexer("bench", home=home)
        write = ix.build if pool == "perspectives" else ix.add
        build = timed(partial(write, [Source(pool, path)]))[0] / 1000
        p = Perspect.open("bench", home=home)
        n = p.pools[pool]
        for q in queries[:20]:  # warm caches
            p.search(q, k=k, pool=pool)
        t_all = time.perf_counter()
        search = partial(p.search, k=k, pool=pool)
        ms = [timed(partial(search, q))[0] for q in queries]
        qps = len(queries) / (time.perf_counter() - t_all)
        t = Timing.of(ms)
        rows.append([pool, f"{n:,}", f"{build:.2f}", f"{n / build:,.0f}",
                     f"{_du(p._searcher.version / pool) / 2**20:.1f}", f"{len(queries)} (k={k})",
                     f"{qps:,.0f}", f"{t.p50:.2f}", f"{t.p95:.2f}"])  # fmt: skip
    print(f"# BM25 (tantivy) on PERSPECTRUM — {os.cpu_count()} CPUs\n")
    print(table("pool|items|build s|items/s|size MiB|queries|q/s|p50 ms|p95 ms".split("|"), rows))
    print("\n(perspectives: full build; evidence: `index add` of the pool to the live index)")

    p = Perspect.open("bench", home=home)
    ranked = {c.cid: [int(h.id) for h in p.search(c.text, k=args.kmax).hits] for c in dev}
    scores = []
    for k in range(1, args.kmax + 1):
        m = macro(claim_pr(ranked[c.cid][:k], [cl.pids for cl in c.clusters]) for c in dev)
        scores.append((k, m))
    best_k, _ = max(scores, key=lambda r: r[1].f1)
    print(f"\n# PERSPECTRUM T1 (perspective relevance), IR baseline, dev ({len(dev)} claims)\n")
    shown = [
        [k, f"{100 * m.precision:.1f}", f"{100 * m.recall:.1f}",
         f"{100 * m.f1:.1f}" + (" ← best on dev" if k == best_k else "")]
        for k, m in scores
        if k in (1, 3, 5, 10, 15, 20, 30, 50) or k == best_k
    ]  # fmt: skip
    print(table(["top-k", "precision", "recall", "F1"], shown))
    print(f"\npeak RSS: {_rss_mib():.0f} MiB")
    return 0


# ---- ColBERT: build variants and updates -------------------------------------------------------


def _colbert_args(p, int8: bool = False) -> None:
    p.add_argument("--colbert-model", default=None, help="default: the bundle's (models/colbert)")
    p.add_argument("--limit", type=int, default=None, help="first N dev claims only (default: all)")
    if int8:
        p.add_argument("--no-int8", action="store_true", help="skip the int8 encoding variant")


def _colbert_model(args) -> str | None:
    """The model to encode with, or None after a skip line (no model: make models COLBERT=1)."""
    from perspect.retriever.colbert import default_model

    model = args.colbert_model or str(default_model())
    if not Path(model).exists():
        print(f"skip: no ColBERT model at {model} (make models COLBERT=1)")
        return None
    return model


def _score(b, queries: list[tuple[str, set[str]]], reference: dict | None = None) -> list[str]:
    """Mean recall@KS over the queries (query, gold ids), the share of `reference`'s top 10 also
    returned (kept there when it is empty: the first variant is the reference) and warm p50."""
    b.search(queries[0][0], 5)  # warm: kernels, the flat token matrix
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    overlap, times = [], []
    for q, gold in queries:
        took, hits = timed(lambda q=q: b.search(q, max(KS)))
        times.append(took)
        got = [d for d, _ in hits]
        for k in KS:
            recalls[k].append(len(gold & set(got[:k])) / len(gold))
        if reference is not None:
            reference.setdefault(q, got[:10])
            overlap.append(len(set(reference[q]) & set(got[:10])) / 10)
    cells = [f"{statistics.mean(recalls[k]):.3f}" for k in KS]
    if reference is not None:
        cells.append(f"{statistics.mean(overlap):.3f}")
    return [*cells, f"{Timing.of(times).p50:.1f}"]


def colbert(args) -> int:
    """ColBERT build of the evidence pool: where the time goes, what each cut costs in recall."""
    from perspect.core.datasets.fetch import evidence_pool_file
    from perspect.core.datasets.perspectrum import load_claims, load_evidence, load_perspectives
    from perspect.retriever.colbert import ColBERTBackend

    data = Path(args.data)
    if not evidence_pool_file(data):
        print(f"skip: no PERSPECTRUM evidence pool in {data}")
        return 0
    if (model := _colbert_model(args)) is None:
        return 0
    P, E = load_perspectives(data), load_evidence(data)
    ids, texts = [str(i) for i in E], list(E.values())
    queries = []
    for c in load_claims(data, "dev")[: args.limit]:
        for cl in c.clusters:
            gold = {str(e) for e in cl.evidence if e in E}
            if gold and cl.pids[0] in P:
                queries.append((f"{c.text} {P[cl.pids[0]]}", gold))
    tmp = Path(tempfile.mkdtemp(prefix="perspect-colbert-build-"))
    cfg = {"model": model}
    print(f"# ColBERT build of the evidence pool ({len(ids):,} paragraphs), {model}\n")
    print(f"dev queries (claim + perspective): {len(queries)}\n")

    def encode(folder: str, int8: bool) -> tuple[list, float]:
        import torch

        backend = ColBERTBackend.create(tmp / folder, cfg)
        if int8:
            backend.model[0].auto_model = torch.ao.quantization.quantize_dynamic(
                backend.model[0].auto_model, {torch.nn.Linear}, dtype=torch.qint8
            )
        ms, embs = timed(lambda: backend.encode(texts, is_query=False))
        return embs, ms / 1000

    encodings = {"float32": encode("enc32", False)}
    if not args.no_int8:
        encodings["int8"] = encode("enc8", True)
    tokens = sum(int(e.shape[0]) for e in encodings["float32"][0])
    print("## Encoding\n")
    enc_rows = [
        [name, f"{sec:.1f}", f"{len(ids) / sec:.1f}"] for name, (_, sec) in encodings.items()
    ]
    print(table(["encoder", "seconds", "paragraphs/s"], enc_rows))
    print(f"\n{tokens:,} token vectors\n")

    exact = {"min_plaid_docs": 10**9}
    variants = [
        ("PLAID, 4 k-means iterations", "float32", {"min_plaid_docs": 0, "kmeans_niters": 4}),
        ("PLAID, 2 k-means iterations", "float32", {"min_plaid_docs": 0, "kmeans_niters": 2}),
        ("exact MaxSim", "float32", exact),
    ]
    if "int8" in encodings:
        variants.append(("exact MaxSim, int8 encoder", "int8", exact))
    rows = []
    for i, (name, enc, extra) in enumerate(variants):
        folder = tmp / f"v{i}"
        b = ColBERTBackend.create(folder, {**cfg, **extra})
        before = _rss_mib()
        build, _ = timed(lambda b=b, enc=enc: (b.add_encoded(ids, encodings[enc][0]), b.commit()))
        grew = _rss_mib() - before
        rows.append([name, f"{build / 1000:.1f}", f"{grew:.0f}", f"{_du(folder) / 2**20:.1f}",
                     *_score(b, queries)])  # fmt: skip
    print("## Index build and recall (same vectors)\n")
    heads = ["variant", "build s", "RSS growth MiB", "disk MiB", *(f"R@{k}" for k in KS), "p50 ms"]
    print(table(heads, rows))
    print(f"\npeak RSS of this process: {_rss_mib():.0f} MiB")
    return 0


def delta(args) -> int:
    """ColBERT updates: PLAID plus an exact delta and tombstones, against a full rebuild."""
    if not harness.have_perspectrum(args.data):
        return 0
    from perspect.core.datasets.perspectrum import load_claims, load_perspectives
    from perspect.retriever.colbert import ColBERTBackend

    if (model := _colbert_model(args)) is None:
        return 0
    P = load_perspectives(args.data)
    ids, texts = [str(i) for i in P], list(P.values())
    queries = []
    for c in load_claims(args.data, "dev")[: args.limit]:
        gold = {str(p) for cl in c.clusters for p in cl.pids if p in P}
        if gold:
            queries.append((c.text, gold))
    tmp = Path(tempfile.mkdtemp(prefix="perspect-colbert-delta-"))
    cfg = {"model": model, "min_plaid_docs": 1000}
    print(f"# ColBERT delta vs full rebuild: {len(ids):,} perspectives, "
          f"{len(queries)} dev claims\n")  # fmt: skip
    ms, embs = timed(lambda: ColBERTBackend.create(tmp / "enc", cfg).encode(texts, is_query=False))
    print(f"encoded in {ms / 1000:.0f} s\n")
    vec = dict(zip(ids, embs, strict=True))
    order = ids[:]
    random.Random(0).shuffle(order)
    variants = [("full PLAID build (reference)", 0.0, 0.0)]
    for added, replaced in ((0.1, 0.0), (0.3, 0.0), (0.2, 0.1), (0.45, 0.0)):
        variants.append((f"PLAID {1 - added:.0%} + delta {added:.0%}, {replaced:.0%} replaced",
                         added, replaced))  # fmt: skip
    reference: dict[str, list[str]] = {}
    rows = []
    for n, (name, added, replaced) in enumerate(variants):
        b = ColBERTBackend.create(tmp / f"v{n}", cfg)
        cut = int(len(order) * (1 - added))
        b.add_encoded(order[:cut], [vec[i] for i in order[:cut]])
        if added:
            b.add_encoded(order[cut:], [vec[i] for i in order[cut:]])
        if replaced:
            again = order[: int(len(order) * replaced)]
            b.add_encoded(again, [vec[i] for i in again])  # tombstone + delta copy
        b.commit()
        assert b.count() == len(ids)
        rows.append([name, *_score(b, queries, reference)])
        b.close()
    print(table(["index", *(f"R@{k}" for k in KS), "top-10 overlap", "p50 ms"], rows))
    return 0


# ---- index add ---------------------------------------------------------------------------------


def _articles(n: int, data: Path) -> list[dict]:
    """The first `n` PolitiHop rulings of 20 sentences or more, as news articles."""
    csv.field_size_limit(1 << 30)
    out = []
    with open(data / "politihop_valid.tsv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            sents = json.loads(row["ruling"]) if row["ruling"].startswith("[") else []
            if len(sents) >= 20:
                text = "\n\n".join(" ".join(sents[i : i + 4]) for i in range(0, len(sents), 4))
                out.append({"id": f"politihop-{row['article_id']}", "title": row["statement"][:120],
                            "outlet": "PolitiFact", "text": text})  # fmt: skip
            if len(out) == n:
                break
    return out


def _files(home: Path, name: str) -> dict[str, tuple[int, int]]:
    """The live version's files: relative path -> (inode, size)."""
    version = home / name / "versions" / (home / name / "CURRENT").read_text().strip()
    out = {}
    for root, _dirs, names in os.walk(version):
        for f in names:
            st = (Path(root) / f).stat()
            out[str((Path(root) / f).relative_to(version))] = (st.st_ino, st.st_size)
    return out


def _add_once(run, home: Path, name: str, news: Path) -> tuple[float, int, int, float]:
    """(seconds, new bytes, shared bytes, CPU seconds of the command and its children) of one
    add. The CPU seconds depend less on what else the machine runs than the wall time."""
    before = {ino for ino, _ in _files(home, name).values()}
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = ["index", "add", "--name", name, "--home", str(home), "--news", str(news), "-q"]
    wall, r = timed(lambda: run(argv))
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    if r.returncode:
        raise SystemExit(f"index add failed: {r.stderr[-800:]}")
    after = _files(home, name).values()
    new = sum(size for ino, size in after if ino not in before)
    return wall / 1000, new, sum(size for ino, size in after if ino in before), cpu


def add(args) -> int:
    """`perspect index add` of news articles to a copy of an index: wall and CPU time, new bytes."""
    src = _home(args) / args.index
    if not (src / "CURRENT").is_file():
        print(f"skip: no index {args.index} in {src.parent}")
        return 0
    arts = _articles(args.articles, Path(args.data))
    perspect = str(Path(sys.executable).with_name("perspect"))
    codes = {"this checkout": lambda argv: subprocess.run([perspect, *argv], **QUIET)}
    if args.baseline_tree:
        tree = Path(args.baseline_tree)
        codes[f"baseline {tree.name}"] = partial(harness.run_tree, tree, **QUIET)
    got: dict[str, list[tuple[float, int, int, float]]] = {k: [] for k in codes}
    with tempfile.TemporaryDirectory(prefix="perspect-add-") as tmp:
        news = Path(tmp) / "news.jsonl"
        news.write_text("".join(json.dumps(a) + "\n" for a in arts))

        def on_a_copy(label: str):
            def one(_run: str) -> None:  # a fresh copy of the index for each add
                home = Path(tempfile.mkdtemp(dir=tmp))
                shutil.copytree(src, home / args.index, symlinks=True)
                got[label].append(_add_once(codes[label], home, args.index, news))
                shutil.rmtree(home)

            return one

        runners = {label: on_a_copy(label) for label in codes}
        harness.taking_turns(runners, [str(r) for r in range(args.runs)], warm=False)
    sentences = sum(len(a["text"].split(". ")) for a in arts)
    print(f"# `perspect index add --news` of {len(arts)} articles (~{sentences} sentences) to a "
          f"copy of index {args.index}, {args.runs} runs each, taking turns\n")  # fmt: skip
    med = lambda rows, k: statistics.median(r[k] for r in rows)  # noqa: E731
    cells = [[label, f"{med(rows, 0):.1f}", f"{max(r[0] for r in rows):.1f}", f"{med(rows, 3):.1f}",
              f"{med(rows, 1) / 1e6:.1f}", f"{med(rows, 2) / 1e6:.1f}"]
             for label, rows in got.items()]  # fmt: skip
    heads = ["code", "wall s (median)", "wall s (max)", "CPU s (median)", "new files MB",
             "shared with the version before MB"]  # fmt: skip
    print(table(heads, cells))
    return 0


def _add_args(p) -> None:
    p.add_argument("--articles", type=int, default=10, help="PolitiHop articles added")
    p.add_argument("--runs", type=int, default=2, help="adds per code, the codes taking turns")
    p.add_argument("--data", type=Path, default=harness.SHARED / "politihop",
                   help="PolitiHop's folder (../shared/data/politihop)")  # fmt: skip


def _bm25_args(p) -> None:
    p.add_argument("--kmax", type=int, default=50, help="largest top-k cut-off tried on dev")


def main(argv: list[str] | None = None) -> int:
    return harness.commands(
        __doc__,
        {
            "stages": (stages, ["index", "home"], None),
            "bm25": (bm25, ["data"], _bm25_args),
            "colbert": (colbert, ["data"], partial(_colbert_args, int8=True)),
            "delta": (delta, ["data"], _colbert_args),
            "add": (add, ["index", "home", "baseline-tree"], _add_args),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
