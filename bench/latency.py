"""Whole-search latency of the engine vs a naive pipeline, over PERSPECTRUM dev claims, in one run.

    python bench/latency.py [--index default] [--home indexes] [--model models/pair] [--limit N]
                            [--baseline-tree DIR]

Engine: `Perspect.search` (hybrid retrieval over the index's retrievers, relevance and stance from
one forward pass, equivalence from stored vectors and the equivalence model, asked lazily as the
clusters form, evidence from links precomputed at index time), its models served on ONNX Runtime
(the default); `--baseline-tree`: the default engine of another checkout (the previous main,
exported by bench/baseline.py) in its own process, taking turns with the others; the same on
PyTorch, with the cross-encoders int8-quantized (PyTorch), and int8 with a bounded equivalence
budget (`--caps`: at most N pairs through the equivalence cross-encoder). Cold start: a first
`perspect search` in a new process. Naive: the same cross-encoder on BM25 top-k with separate
relevance and stance passes, the
equivalence head on every pair of kept perspectives, and evidence retrieved and judged by the
evidence head per kept perspective (2 paragraphs each), no precomputation. Warm (models loaded, one
warm-up query), one query at a time, this machine's CPUs.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import baseline  # noqa: E402
import cold_start as cold  # noqa: E402

from perspect import Perspect  # noqa: E402
from perspect.core.datasets.perspectrum import load_claims  # noqa: E402
from perspect.pipeline.engine import EngineConfig  # noqa: E402
from perspect.reranker.roles import pair_for  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def naive(p: Perspect, claim: str, k: int) -> int:
    eng = p.engine()
    m = eng.model
    hits = p.retrieve(claim, k=k, retriever="bm25").hits
    pairs = [pair_for("relevance", claim, h.text) for h in hits]
    rel = m.predict(pairs, ["relevance"])["relevance"]
    sup = m.predict(pairs, ["stance"])["stance"]
    kept = [h for h, r in zip(hits, rel, strict=True) if r >= m.threshold("relevance")]
    _ = sup
    pp = list(itertools.combinations(kept, 2))
    if pp:
        m.predict([pair_for("equivalence", claim, a.text, b.text) for a, b in pp], ["equivalence"])
    for h in kept[:8]:
        ev = p.retrieve(f"{claim} {h.text}", k=2, pool="evidence", retriever="bm25").hits
        if ev:
            m.predict([pair_for("evidence", claim, h.text, e.text) for e in ev], ["evidence"])
    return len(kept)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=None)
    ap.add_argument("--model", default=None)
    ap.add_argument(
        "--baseline-model", default=None, help="also time the engine with this pair model"
    )
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--limit", type=int, default=60)
    ap.add_argument("--cold", type=int, default=3, help="cold `perspect search` runs (0: none)")
    ap.add_argument(
        "--caps",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[48, 24],
        help="also time int8 engines with these equivalence cross-encoder budgets (pairs)",
    )
    ap.add_argument(
        "--caps-fp32-equivalence",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[],
        help="also time an int8 pair model with the fp32 equivalence cross-encoder, these budgets",
    )
    ap.add_argument(
        "--fp32-caps",
        type=lambda v: [int(x) for x in v.split(",") if x],
        default=[],
        help="also time the fp32 engine with these equivalence cross-encoder budgets",
    )
    ap.add_argument(
        "--baseline-index",
        default=None,
        help="also time the default engine on this index (same home and models): before / after",
    )
    ap.add_argument(
        "--baseline-tree",
        default=None,
        help="also time the default engine of this checkout (the previous main, exported by "
        "bench/baseline.py), in its own process, taking turns claim by claim",
    )
    ap.add_argument(
        "--only-variants",
        action="store_true",
        help="time the default engine and the --caps variants only (no int8 / PyTorch rows, naive)",
    )
    args = ap.parse_args()
    if not (Path(args.data) / "dataset_split_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {args.data}")
        return 0
    claims = [c.text for c in load_claims(args.data, "dev")][: args.limit]
    p = Perspect.open(args.index, home=args.home, model=args.model)
    pq = Perspect.open(
        args.index, home=args.home, model=args.model, config=EngineConfig(quantize=True)
    )
    pt = Perspect.open(
        args.index, home=args.home, model=args.model, config=EngineConfig(runtime="torch")
    )
    engines = {"engine": p} if args.only_variants else {"engine": p, "engine int8": pq}
    if not args.only_variants:
        engines["engine pytorch"] = pt
    for cap in args.caps_fp32_equivalence:
        engines[f"engine int8 pair model, fp32 equivalence, cap {cap}"] = Perspect.open(
            args.index,
            home=args.home,
            model=args.model,
            config=EngineConfig(
                quantize=True, quantize_equivalence=False, equivalence_ce_max_pairs=cap
            ),
        )
    for cap in args.fp32_caps:
        engines[f"engine, equivalence cap {cap}"] = Perspect.open(
            args.index,
            home=args.home,
            model=args.model,
            config=EngineConfig(equivalence_ce_max_pairs=cap),
        )
    if args.baseline_index:
        engines[f"engine on index {args.baseline_index}"] = Perspect.open(
            args.baseline_index, home=args.home, model=args.model
        )
    for cap in args.caps:
        engines[f"engine int8, equivalence cap {cap}"] = Perspect.open(
            args.index,
            home=args.home,
            model=args.model,
            config=EngineConfig(quantize=True, equivalence_ce_max_pairs=cap),
        )
    if args.baseline_model:
        engines[f"engine, {args.baseline_model}"] = Perspect.open(
            args.index, home=args.home, model=args.baseline_model
        )
        for cap in args.caps:
            engines[f"engine int8, equivalence cap {cap}, {args.baseline_model}"] = Perspect.open(
                args.index,
                home=args.home,
                model=args.baseline_model,
                config=EngineConfig(quantize=True, equivalence_ce_max_pairs=cap),
            )
    worker = None
    if args.baseline_tree:
        home = str(Path(args.home or ROOT / "indexes").resolve())
        worker = baseline.search_worker(Path(args.baseline_tree), args.index, home)
        worker.ask(claims[0])
    tree_row = f"previous main ({Path(args.baseline_tree).name})" if worker else None
    eng = p.engine()
    passes = [0]  # cross-encoder passes (one pair in one order) of the current "engine" search
    ce_passes: list[int] = []
    pairs_scored: list[int] = []  # pairs the equivalence model scored (engine), any model
    if eng.equivalence_ce is not None:
        score = eng.equivalence_ce.one_order
        eng.equivalence_ce.one_order = lambda c, pairs, reverse=False: (
            passes.__setitem__(0, passes[0] + len(pairs)),
            score(c, pairs, reverse),
        )[1]
    for q in engines.values():
        q.search(claims[0])
    naive(p, claims[0], eng.config.candidates)
    print(
        f"# Whole-search latency, {len(claims)} PERSPECTRUM dev claims, index {args.index} "
        f"({', '.join(p._searcher.retrievers)}), warm\n"
    )
    print("| pipeline | p50 ms | p95 ms | mean ms | clusters/claim |")
    print("|---|---|---|---|---|")
    stage_times: dict[str, list[float]] = {}
    names = (
        *engines,
        *((tree_row,) if worker else ()),
        *(() if args.only_variants else ("naive",)),
    )
    times: dict[str, list[float]] = {n: [] for n in names}
    sizes: dict[str, list[int]] = {n: [] for n in names}
    # Claim by claim, every pipeline in turn: run one pipeline over all claims, then the next,
    # and the first rows paid for whatever the machine was doing (one run measured ONNX Runtime
    # 531 vs PyTorch 435 ms p50 that way; interleaved on 30 claims: 514 vs 512).
    for c in claims:
        for name in names:
            t0 = time.perf_counter()
            if name == tree_row:
                got = worker.ask(c)
                sizes[name].append(got["clusters"])
                times[name].append(got["ms"])  # timed in its process: no pipe in it
                continue
            if name in engines:
                passes[0] = 0
                eng_q = engines[name].engine()
                eng_q.clusters.last = None
                r = engines[name].search(c)
                if name == "engine" and eng.equivalence_ce is not None:
                    ce_passes.append(passes[0])
                if name == "engine":
                    last = eng_q.clusters.last
                    pairs_scored.append(len(last.scored) if last is not None else 0)
                sizes[name].append(len(r.clusters))
                for k, v in r.timings_ms.items():
                    stage_times.setdefault(f"{name}: {k}", []).append(v)
            else:
                sizes[name].append(naive(p, c, eng.config.candidates))
            times[name].append((time.perf_counter() - t0) * 1000)
    for name in names:
        t = times[name]
        print(
            f"| {name} | {statistics.median(t):.0f} | {pct(t, 0.95):.0f} | "
            f"{statistics.mean(t):.0f} | {statistics.mean(sizes[name]):.1f} |"
        )
    print(
        "\nengine stages (p50 ms): "
        + ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in stage_times.items())
    )
    print("(naive 'clusters' = kept perspectives: it does not cluster)")
    if args.cold:
        cold_start(args, claims[1])
        if args.baseline_tree:
            print(f"{tree_row}:", end=" ")
            cold_start(args, claims[1], Path(args.baseline_tree))
        if args.baseline_model:
            print(f"baseline {args.baseline_model}:", end=" ")
            cold_start(
                argparse.Namespace(**{**vars(args), "model": args.baseline_model}), claims[1]
            )
    if worker:
        worker.close()
    if pairs_scored:
        print(
            f"equivalence pairs scored per search (engine, lazy complete-link): median "
            f"{statistics.median(pairs_scored):.0f}, p95 {pct(pairs_scored, 0.95)}, "
            f"max {max(pairs_scored)}"
        )
    if ce_passes:
        print(
            f"equivalence cross-encoder passes per search (engine; a pair in one order): median "
            f"{statistics.median(ce_passes):.0f}, p95 {pct(ce_passes, 0.95)}, max {max(ce_passes)}"
        )
    return 0


def cold_start(args, claim: str, tree: Path | None = None) -> None:
    """A first `perspect search` in a new process, as a user types it: wall time to the answer
    (the models' cache already built: the first-ever run also rebuilds the bundle once); `tree`:
    that checkout's (bench/baseline.py). Timed as bench/cold_start.py times it (`once`)."""
    home = str(Path(args.home or ROOT / "indexes").resolve())
    argv = ["search", claim, "--index", args.index, "--json", "--home", home]
    argv += ["--model", args.model] if args.model else []
    walls = []
    for _ in range(args.cold):
        try:
            walls.append(cold.once(tree or ROOT, argv)[0])
        except RuntimeError as e:
            print(f"cold start failed: {e}")
            return
    print(
        f"cold start (new process, `perspect search --json`, {args.cold} runs): "
        f"median {statistics.median(walls):.1f} s, max {max(walls):.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
