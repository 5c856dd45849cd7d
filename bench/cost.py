"""Warm search cost: the engine beside its variants, the argument model, mining, the heads' rates.

    python -m bench cost search [--index default] [--home DIR] [--model DIR] [--limit 60]
                                [--cold 3] [--only-variants] [--baseline-model DIR]
                                [--baseline-index NAME] [--baseline-tree DIR]
    python -m bench cost argument [--index default] [--home DIR] [--limit 30] [--set dev|reader]
    python -m bench cost mining [--index default] [--home indexes] [--articles 1000]
                                [--name with-documents] [--limit 60]
    python -m bench cost heads [--model models/pair] [--data ../shared/data/perspectrum] [--n 256]
    python -m bench cost news [--index default] [--home DIR] [--k 10]

Warm (models loaded, each row answers the first claim once, untimed), one search at a time, this
machine's CPUs; claims: PERSPECTRUM dev's first `--limit` as its split file lists them
(`dev-listed`: the set the figures were taken on), for `argument` by id. The rows answer each claim
in turn, always in the same order (`harness.taking_turns(alternate=False)`): the first row is each claim's first search in
this process, the rows after it on the same index find what it kept.

`search`: `Perspect.search` (hybrid retrieval over the index's retrievers, relevance and stance
from one forward pass, equivalence from stored vectors and the equivalence model, asked lazily as
the clusters form, evidence from links precomputed at index time), its models served on ONNX
Runtime (the default); beside it the same with the cross-encoders int8-quantized, the same on
PyTorch, and the naive pipeline: the same cross-encoder on BM25 top-k with separate relevance and
stance passes, the equivalence head on every pair of kept perspectives, evidence retrieved and
judged by the evidence head per kept perspective (2 paragraphs each), no precomputation.
`--only-variants`: the engine and the `--baseline-*` rows only. `--baseline-tree`: the default
engine of another checkout (the previous main: `python -m bench harness --make DIR`) in its own
process. `--cold N`: N first `perspect search` runs in a new process each (`first.cold_starts`).

`argument`: the default engine beside the same without the argument model (`EngineConfig(
argument=False)`, as before issue 55), and the default's per-stage p50, where the argument model's
stages are (relevance+stance: the neither pass; evidence: the sentence judgments; pool reasons).
Claims: dev, or the reader bench's argument set (`reader`, written for it).

`mining` (issue 45: "search p50 with mining <= 1.5x without"): the index beside a copy with 1,000
articles added as documents (`--name`, made through `Indexer.add` only when missing, its build
time printed). The articles are PERSPECTRUM's evidence paragraphs as `make models`' mining step
makes them (`perspect.lab.mining_fit.evidence_articles`: argumentative debate text, so many are
mined: the costly case).

`heads`: pairs/s of the pairwise heads at their real input lengths (real dev inputs built with
`reranker.roles.pair_for`). "relevance+stance" is one forward pass feeding both heads; the naive
row runs them as two passes, the cost a two-model design would pay. Each row in PyTorch, on ONNX
Runtime (`PairModel.for_inference`, what the engine uses) and int8 (PyTorch), in the same run.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import first, harness


def naive(p, claim: str, k: int) -> int:
    """The naive pipeline (module docstring); returns how many perspectives it kept."""
    from perspect.reranker.roles import pair_for

    m = p.engine().model
    hits = p.retrieve(claim, k=k, retriever="bm25").hits
    pairs = [pair_for("relevance", claim, h.text) for h in hits]
    rel = m.predict(pairs, ["relevance"])["relevance"]
    m.predict(pairs, ["stance"])
    kept = [h for h, r in zip(hits, rel, strict=True) if r >= m.threshold("relevance")]
    pp = list(itertools.combinations(kept, 2))
    if pp:
        m.predict([pair_for("equivalence", claim, a.text, b.text) for a, b in pp], ["equivalence"])
    for h in kept[:8]:
        ev = p.retrieve(f"{claim} {h.text}", k=2, pool="evidence", retriever="bm25").hits
        if ev:
            m.predict([pair_for("evidence", claim, h.text, e.text) for e in ev], ["evidence"])
    return len(kept)


def search(a) -> int:
    """Whole-search latency of the engine beside int8, PyTorch, naive and the baselines."""
    claims = harness.claims("dev-listed", a.limit, a.data)
    if not claims:
        return 0
    from perspect import Perspect
    from perspect.pipeline.engine import EngineConfig

    def opened(index=a.index, model=a.model, **config) -> Perspect:
        cfg = EngineConfig(**config) if config else None
        return Perspect.open(index, home=a.home, model=model, config=cfg)

    engines = {"engine": opened()}
    if not a.only_variants:
        engines["engine int8"] = opened(quantize=True)
        engines["engine pytorch"] = opened(runtime="torch")
    if a.baseline_index:
        engines[f"engine on index {a.baseline_index}"] = opened(index=a.baseline_index)
    if a.baseline_model:
        engines[f"engine, {a.baseline_model}"] = opened(model=a.baseline_model)
    p, eng = engines["engine"], engines["engine"].engine()
    passes = [0]  # cross-encoder passes (one pair in one order) of the current search
    if eng.equivalence_ce is not None:
        score = eng.equivalence_ce.one_order
        eng.equivalence_ce.one_order = lambda c, pairs, reverse=False: (
            passes.__setitem__(0, passes[0] + len(pairs)),
            score(c, pairs, reverse),
        )[1]

    def engine_run(q):
        def run(claim: str):
            passes[0] = 0
            q.engine().clusters.last = None
            r = q.search(claim)
            last = q.engine().clusters.last
            return len(r.clusters), r.timings_ms, passes[0], len(last.scored) if last else 0

        return run

    runners = {name: engine_run(q) for name, q in engines.items()}
    worker = tree_row = None
    if a.baseline_tree:
        worker = harness.search_worker(a.baseline_tree, a.index, first.home_of(a))
        tree_row = f"previous main ({a.baseline_tree.name})"
        ask, own = first.worker_turn(worker)

        def tree_run(claim: str):
            got = ask(claim)
            return got["clusters"], got.get("timings", {}), 0, 0

        runners[tree_row] = tree_run
    if not a.only_variants:
        runners["naive"] = lambda c: (naive(p, c, eng.config.candidates), {}, 0, 0)
    sizes: dict[str, list[int]] = {n: [] for n in runners}
    stages: dict[str, list[float]] = {}
    ce_passes: list[int] = []
    pairs_scored: list[int] = []  # pairs the equivalence model scored (engine), any model

    def seen(name, _claim, _ms, got) -> None:
        sizes[name].append(got[0])
        for k, v in got[1].items():
            stages.setdefault(f"{name}: {k}", []).append(v)
        if name == "engine":
            pairs_scored.append(got[3])
            if eng.equivalence_ce is not None:
                ce_passes.append(got[2])

    ms = harness.taking_turns(runners, claims, seen=seen, alternate=False)
    if worker:
        ms[tree_row] = own[-len(claims) :]  # timed in its process: no pipe in it
    print(
        f"# Whole-search latency, {len(claims)} PERSPECTRUM dev claims, index {a.index} "
        f"({', '.join(p._searcher.retrievers)}), warm\n"
    )
    print(harness.cost_table(ms, "engine"))
    per = ", ".join(f"{n} {statistics.fmean(s):.1f}" for n, s in sizes.items())
    print(f"\nclusters a claim: {per}")
    if "naive" in runners:
        print("(naive's 'clusters' are kept perspectives: it does not cluster)")
    per = ", ".join(f"{k} {statistics.median(v):.0f}" for k, v in stages.items())
    print(f"stages (p50 ms): {per}")
    for what, xs in (
        ("equivalence pairs scored a search (engine, lazy complete-link)", pairs_scored),
        ("equivalence cross-encoder passes a search (engine; a pair in one order)", ce_passes),
    ):
        if xs:
            spread = f"p95 {harness.pct(xs, 0.95)}, max {max(xs)}"
            print(f"{what}: median {statistics.median(xs):.0f}, {spread}")
    if a.cold:  # the second claim, as before: the first is every row's warm-up
        home = str(first.home_of(a))
        argv = ["search", claims[1 % len(claims)], "--index", a.index, "--json", "--home", home]
        model = ["--model", a.model] if a.model else []
        starts = {"engine": (harness.ROOT, argv + model)}
        if a.baseline_tree:
            starts[tree_row] = (a.baseline_tree.resolve(), argv + model)
        if a.baseline_model:
            starts[f"engine, {a.baseline_model}"] = (
                harness.ROOT,
                [*argv, "--model", a.baseline_model],
            )
        try:
            cold_ms, answers = first.cold_starts(starts, a.cold, warm=False)
            print(f"\ncold start (a new process, `perspect search --json`, {a.cold} runs each):")
            print(first.cold_table(cold_ms, answers))
        except RuntimeError as e:
            print(f"cold start failed: {e}")
    if worker:
        worker.close()
    harness.write_json(a.json, {n: harness.Timing.of(xs) for n, xs in ms.items()})
    return 0


def search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="the pair model (default: the bundle's)")
    p.add_argument("--baseline-model", default=None, help="also the engine with this pair model")
    p.add_argument("--baseline-index", default=None, help="also the engine on this index")
    p.add_argument("--cold", type=int, default=3, help="cold `perspect search` runs (0: none)")
    p.add_argument(
        "--only-variants",
        action="store_true",
        help="the engine and the --baseline-* rows only (no int8, PyTorch, naive)",
    )
    p.set_defaults(limit=60)


def argument(a) -> int:
    """What the argument model costs a search: the default engine beside argument=False."""
    claims = harness.claims(a.set, a.limit, a.data)
    if not claims:
        return 0
    from perspect.api import Perspect
    from perspect.pipeline.engine import EngineConfig

    engines = {
        "default (argument model)": Perspect.open(a.index, home=a.home),
        "argument=False (before)": Perspect.open(
            a.index, home=a.home, config=EngineConfig(argument=False)
        ),
    }
    stages: dict[str, list[float]] = {}

    def seen(name, _claim, _ms, res) -> None:
        if name.startswith("default"):
            for s, v in res.timings_ms.items():
                stages.setdefault(s, []).append(v)

    ms = harness.taking_turns(
        {n: p.search for n, p in engines.items()}, claims, seen=seen, alternate=False
    )
    print(f"{len(claims)} {a.set} claims, index {a.index!r}, warm, one search at a time\n")
    print(harness.cost_table(ms))
    per = ", ".join(f"{s} {statistics.median(v):.0f}" for s, v in stages.items())
    print(f"\ndefault engine, stage p50 ms: {per}")
    harness.write_json(a.json, {n: harness.Timing.of(xs) for n, xs in ms.items()})
    return 0


def argument_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", choices=("dev", "reader"), default="dev")


def prepare(home: Path, base: str, name: str, n: int, data: Path) -> None:
    """Index `name`: a copy of `base` with the first `n` evidence articles added as documents."""
    import json
    import shutil
    import tempfile

    from perspect.indexer.indexer import Indexer, Source
    from perspect.lab.mining_fit import evidence_articles

    if (home / name / "CURRENT").is_file():
        return
    shutil.copytree(home / base, home / name, symlinks=True)
    arts = evidence_articles(data)[:n]
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "articles.jsonl"
        src.write_text("".join(json.dumps(x) + "\n" for x in arts))
        took, _ = harness.timed(lambda: Indexer(name, home=home).add([Source("documents", src)]))
    print(f"index {name}: {base} + {len(arts)} articles in {took / 1000:.0f} s")


def mining(a) -> int:
    """What mining costs a search: the index beside a copy with 1,000 articles as documents."""
    home = first.home_of(a)
    claims = harness.claims("dev-listed", a.limit, a.data)
    if not claims:
        return 0
    if not (home / a.index / "CURRENT").is_file():
        print(f"skip: no index {a.index} in {home}")
        return 0
    from perspect import Perspect

    prepare(home, a.index, a.name, a.articles, a.data)
    without, mined_row = f"without documents ({a.index})", f"with mining ({a.name})"
    engines = {
        without: Perspect.open(a.index, home=home),
        mined_row: Perspect.open(a.name, home=home),
    }
    mined: list[int] = []
    stage: list[float] = []

    def seen(name, _claim, _ms, r) -> None:
        if name == mined_row:
            mined.append(sum(m.mined for cl in r.clusters for m in cl.members))
            stage.append(r.timings_ms.get("mining", 0.0))

    ms = harness.taking_turns(
        {n: p.search for n, p in engines.items()}, claims, seen=seen, alternate=False
    )
    docs = engines[mined_row]._searcher.pools.get("documents", 0)
    print(
        f"\n# Mining latency: {len(claims)} dev claims, warm, in turn; {a.name}: "
        f"{a.index} + {docs} document sentences\n"
    )
    print(harness.cost_table(ms, without))
    print(
        f"\nthe mining stage p50 {statistics.median(stage):.0f} ms, p95 "
        f"{harness.pct(stage, 0.95):.0f}; mined members shown a search: median "
        f"{statistics.median(mined):.0f}, max {max(mined)}"
    )
    harness.write_json(a.json, {n: harness.Timing.of(xs) for n, xs in ms.items()})
    return 0


def mining_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="with-documents", help="the copy with the articles")
    p.add_argument("--articles", type=int, default=1000)
    p.set_defaults(limit=60)


def heads(a) -> int:
    """Inference speed of the pairwise heads at their real input lengths (pairs/s, warm)."""
    if not (a.data / "perspective_pool_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {a.data}")
        return 0
    from perspect.core.datasets.perspectrum import load_claims, load_evidence, load_perspectives
    from perspect.reranker.model import PairModel
    from perspect.reranker.roles import pair_for

    def rate(model: PairModel, pairs, tasks) -> float:
        """Pairs per second of one forward pass feeding `tasks`' heads."""
        model.predict(pairs[:32], tasks)  # warm-up
        return len(pairs) / (harness.timed(lambda: model.predict(pairs, tasks))[0] / 1000)

    model = PairModel.load(a.model)
    runtimes = {"pytorch": model, "onnxruntime": model.for_inference(), "int8": model.quantized()}
    if runtimes["onnxruntime"] is model:
        del runtimes["onnxruntime"]  # onnxruntime missing or the export failed (logged)
    P, E = load_perspectives(a.data), load_evidence(a.data)
    dev = load_claims(a.data, "dev")
    rs = [pair_for("relevance", c.text, P[p]) for c in dev for p in sorted(c.pids)][: a.n]
    eq = [
        pair_for("equivalence", c.text, P[x], P[y])
        for c in dev
        for x, y in itertools.combinations(sorted(c.pids), 2)
    ][: a.n]
    ev = [
        pair_for("evidence", c.text, P[cl.pids[0]], E[e])
        for c in dev
        for cl in c.clusters
        for e in cl.evidence
        if e in E
    ][: a.n // 2]
    rows = []
    for name, pairs, tasks, passes in (
        ("relevance+stance (one pass)", rs, ["relevance", "stance"], 1),
        ("relevance, stance (naive: two passes)", rs, ["relevance", "stance"], 2),
        ("equivalence", eq, ["equivalence"], 1),
        ("evidence", ev, ["evidence"], 1),
    ):
        ml = model.manifest["max_length"][tasks[0]]
        lens = [min(ml, len(model.tokenizer(x, y)["input_ids"])) for x, y in pairs]
        cells = []
        for m in runtimes.values():
            if passes == 1:
                r = rate(m, pairs, tasks)
            else:  # one pass per head: the time per pair adds up
                r = 1 / sum(1 / rate(m, pairs, [t]) for t in tasks)
            cells.append(f"{r:,.0f}")
        rows.append([name, ml, f"{sum(lens) / len(lens):.0f}", *cells])
    headers = ["head(s)", "max len", "mean tokens", *(f"{r} pairs/s" for r in runtimes)]
    print(harness.table(headers, rows))
    return 0


def heads_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", type=Path, default=harness.ROOT / "models" / "pair")
    p.add_argument("--n", type=int, default=256, help="pairs a row")


def news(a) -> int:
    """A search with the news stage and without (issue 73), on the same index in one warm process:
    the 46 written claims, alternating (each claim searched once, by one of the two: a claim's
    first search in both, and neither reads the other's kept states)."""
    from perspect.api import Perspect

    ms: dict[str, list[float]] = {"with news": [], "without news": []}
    with Perspect.open(a.index, home=a.home) as p:
        stage = p.engine().news_stage
        judge = stage.comparator
        p.search("Warm-up: the first search loads the models", k=a.k)
        for i, claim in enumerate(harness.claims("written")):
            on = i % 2 == 0
            stage.comparator = judge if on else None
            ms["with news" if on else "without news"].append(p.search(claim, k=a.k).took_ms)
    print(harness.cost_table(ms))
    harness.write_json(a.json, {k: harness.Timing.of(v) for k, v in ms.items()})
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    warm = ("index", "home", "data", "limit", "json")
    return harness.commands(
        __doc__,
        {
            "search": (search, (*warm, "baseline-tree"), search_args),
            "argument": (argument, warm, argument_args),
            "mining": (mining, warm, mining_args),
            "heads": (heads, ("data",), heads_args),
            "news": (
                news,
                ("index", "home", "json"),
                lambda p: p.add_argument("--k", type=int, default=10),
            ),
        },
    )(argv)


if __name__ == "__main__":
    raise SystemExit(main())
