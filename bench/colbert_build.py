"""ColBERT index build of the evidence pool: where the time goes, and what each way to cut it
costs in recall, in one run.

    python bench/colbert_build.py [--data DIR] [--colbert-model models/colbert] [--limit N]

The paragraphs are encoded once (timed, float32, and int8 dynamic quantization of the encoder's
linear layers as an alternative); each index variant is then built from the same vectors (timed,
peak memory growth), and scored on PERSPECTRUM dev with claim + perspective queries for their
resolvable gold evidence: recall@k and warm query p50. Variants: PLAID as the shipped default
configured it before (nbits 2, 4 k-means iterations), PLAID with 2 iterations, and exact MaxSim over
every stored token vector (no k-means: the mode a pool below `min_plaid_docs` documents gets).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.core.datasets.fetch import evidence_pool_file  # noqa: E402
from perspect.core.datasets.perspectrum import load_claims, load_evidence, load_perspectives  # noqa: E402
from perspect.retriever.colbert import ColBERTBackend, default_model  # noqa: E402

KS = (10, 20, 60)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def encode(backend: ColBERTBackend, texts: list[str], int8: bool) -> tuple[list, float]:
    import torch

    model = backend.model
    if int8:
        model[0].auto_model = torch.ao.quantization.quantize_dynamic(
            model[0].auto_model, {torch.nn.Linear}, dtype=torch.qint8
        )
    t0 = time.perf_counter()
    embs = backend.encode(texts, is_query=False)
    return embs, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--colbert-model", default=str(default_model()))
    ap.add_argument("--limit", type=int, default=None, help="first N dev claims only")
    ap.add_argument("--no-int8", action="store_true", help="skip the int8 encoding variant")
    args = ap.parse_args()
    data = Path(args.data)
    if not evidence_pool_file(data):
        print(f"skip: no PERSPECTRUM evidence pool in {data}")
        return 0
    if not Path(args.colbert_model).exists():
        print(f"skip: no ColBERT model at {args.colbert_model} (make models COLBERT=1)")
        return 0
    P, E = load_perspectives(data), load_evidence(data)
    ids = [str(i) for i in E]
    texts = [E[i] for i in E]
    queries = []
    for c in load_claims(data, "dev")[: args.limit]:
        for cl in c.clusters:
            gold = {str(e) for e in cl.evidence if e in E}
            if gold and cl.pids[0] in P:
                queries.append((f"{c.text} {P[cl.pids[0]]}", gold))
    tmp = Path(tempfile.mkdtemp(prefix="perspect-colbert-build-"))
    cfg = {"model": args.colbert_model}
    print(f"# ColBERT build of the evidence pool ({len(ids):,} paragraphs), {args.colbert_model}\n")
    print(f"dev queries (claim + perspective): {len(queries)}\n")

    encodings = {"float32": encode(ColBERTBackend.create(tmp / "enc32", cfg), texts, False)}
    if not args.no_int8:
        encodings["int8"] = encode(ColBERTBackend.create(tmp / "enc8", cfg), texts, True)
    tokens = sum(int(e.shape[0]) for e in encodings["float32"][0])
    print("## Encoding\n\n| encoder | seconds | paragraphs/s |\n|---|---|---|")
    for name, (_, sec) in encodings.items():
        print(f"| {name} | {sec:.1f} | {len(ids) / sec:.1f} |")
    print(f"\n{tokens:,} token vectors\n")

    variants = [
        ("PLAID, 4 k-means iterations", "float32", {"min_plaid_docs": 0, "kmeans_niters": 4}),
        ("PLAID, 2 k-means iterations", "float32", {"min_plaid_docs": 0, "kmeans_niters": 2}),
        ("exact MaxSim", "float32", {"min_plaid_docs": 10**9}),
    ]
    if "int8" in encodings:
        variants.append(("exact MaxSim, int8 encoder", "int8", {"min_plaid_docs": 10**9}))
    print("## Index build and recall (same vectors)\n")
    print(
        "| variant | build s | RSS growth MiB | disk MiB | "
        + " | ".join(f"R@{k}" for k in KS)
        + " | p50 ms |"
    )
    print("|---|---|---|---|" + "---|" * (len(KS) + 1))
    for i, (name, enc, extra) in enumerate(variants):
        folder = tmp / f"v{i}"
        b = ColBERTBackend.create(folder, {**cfg, **extra})
        before = rss_mib()
        t0 = time.perf_counter()
        b.add_encoded(ids, encodings[enc][0])
        b.commit()
        build = time.perf_counter() - t0
        grew = rss_mib() - before
        disk = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20
        b.search(queries[0][0], 5)  # warm: kernels, flat token matrix
        recalls = {k: [] for k in KS}
        times = []
        for q, gold in queries:
            t = time.perf_counter()
            got = [d for d, _ in b.search(q, max(KS))]
            times.append((time.perf_counter() - t) * 1000)
            for k in KS:
                recalls[k].append(len(gold & set(got[:k])) / len(gold))
        cells = " | ".join(f"{statistics.mean(recalls[k]):.3f}" for k in KS)
        print(
            f"| {name} | {build:.1f} | {grew:.0f} | {disk:.1f} | {cells} | "
            f"{statistics.median(times):.1f} |"
        )
    print(f"\npeak RSS of this process: {rss_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
