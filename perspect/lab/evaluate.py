"""`perspect eval perspectrum` as a function: run the pipeline over a split, score T1-T5.

The CLI prints the result as a table (perspect.cli.eval); the API returns it (perspect.api).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.datasets.perspectrum import load_claims, load_perspectives
from perspect.core.datasets.reference_rows import load_reference
from perspect.core.progress import NullReporter, Reporter
from perspect.lab import perspectrum_eval as pe
from perspect.lab import reader_view as rv
from perspect.lab.contrast import stance_flips
from perspect.lab.pools import pool_searcher
from perspect.pipeline.engine import Engine, EngineConfig
from perspect.reranker import factory
from perspect.retriever.searcher import Searcher


def evaluate_perspectrum(
    data: str | Path,
    split: str = "dev",
    model_dir: str | Path | None = None,
    index: str | None = None,
    home: str | Path | None = None,
    retrievers: str | None = None,
    k_persp: int | None = None,
    limit: int | None = None,
    quantize: bool = False,
    equivalence_max_pairs: int | None = None,
    quantize_equivalence: bool | None = None,
    cascade: bool = True,
    reference_file: str | Path | None = None,
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """T1-T5 of the pipeline on `split` (metrics in percent, as `perspect.result/1` writes them;
    the IR and all-support baselines of the same run, the decisions used, `--reference` rows).
    The contrast flip rate is the engine's model's (int8 with `quantize`). `cascade=False`: no
    gate before the equivalence cross-encoder (EngineConfig.equivalence_ask_floor), every pair
    the cut could merge asked."""
    data = Path(data)
    reporter = reporter or NullReporter()
    # before the model and a quarter-hour run: a typo in the file fails now, not at the end
    reference = load_reference(reference_file) if reference_file else ()
    model_dir = str(model_dir or paths.pair_model())
    # first: a missing model is the likelier, cheaper failure
    model = factory.load(["pair"], factory.TORCH, model_dir).pair
    claims = load_claims(data, split)[:limit]
    tasks = model.manifest["tasks"]
    k_persp = k_persp or EngineConfig().candidates
    perspectives = load_perspectives(data)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="perspect-eval-") as tmp:
        if index:  # the engine's own index (hybrid over its retrievers, its links)
            searcher = Searcher(index, home=home)
        else:
            # by default the retrievers the model's decisions were fitted with: the relevance
            # stack reads the fused RRF score, and the shipped decisions (BM25 + dense + ColBERT)
            # on a BM25 + dense scratch index gave dev T1 19.8 instead of 54.7
            fitted = model.manifest.get("decisions_retrievers") or ("bm25", "dense")
            kinds = tuple(retrievers.split(",")) if retrievers else tuple(fitted)
            with reporter.stage(f"indexing pools ({'+'.join(kinds)})"):
                searcher = pool_searcher(data, tmp, retrievers=kinds)
        cfg = EngineConfig(
            quantize=quantize,
            quantize_equivalence=quantize_equivalence,
            equivalence_ce_max_pairs=equivalence_max_pairs,
            **({} if cascade else {"equivalence_ask_floor": 0.0}),
        )
        engine = Engine.load(searcher, model, cfg)
        ret_name = searcher.default_retriever
        retrieval = f"{ret_name} ({'+'.join(searcher.retrievers)}) top-{k_persp}"
        with reporter.stage(f"running the pipeline on {split}", total=len(claims)) as adv:
            pred = pe.predict(
                engine,
                claims,
                perspectives,
                k_persp,
                tasks,
                progress=adv,
                int8_tail=equivalence_max_pairs is None,
            )
        searcher.close()
    decisions = engine.decisions
    scores = pe.score(pred, decisions, equivalence_max_pairs)
    # every pair scored (the model's own quality) unless a budget was asked for; the default
    # engine's budget (and the cascade's gate, unless --no-cascade) beside it
    default = EngineConfig()
    default_budget = default.equivalence_ce_max_pairs
    fp32 = default.equivalence_fp32_pairs if pred.t3_cheap else None
    at_default = (
        pe.as_json(
            pe.t3_budgeted(pred, decisions, default_budget, fp32, engine.clusters.ask_floor),
            {"pairs": default_budget, "fp32_pairs": fp32, "ask_floor": engine.clusters.ask_floor},
        )
        if equivalence_max_pairs is None and (default_budget is not None or pred.t3_cheap)
        else None
    )
    ir_k = model.manifest.get("ir_baseline_k", 7)
    ir = pe.ir_t1(pred.t1, ir_k).to_json() if pred.t1 else None
    result = pe.as_json(
        scores,
        {
            "ir_baseline": {"T1": ir, "k": ir_k, "k_tuned_on": "held-out train claims"},
            "T2_detail": rv.stance_detail(pred.t2, decisions.stance) if pred.t2 else None,
            "why": rv.citation_rates(pred.cites),
            "verdicts": rv.verdict_accuracy(pred.t4, decisions) if pred.t4 else None,
            "T2_sides": (
                rv.side_coverage(pred.t2, decisions.stance_side, decisions.stance_unclear)
                if pred.t2
                else None
            ),
            "T2_contrast": (
                stance_flips(engine.stance, claims, perspectives, decisions.stance_side)
                if "stance" in tasks
                else None
            ),
            "split": split,
            "claims": len(claims),
            "model": str(model_dir),
            "quantized": bool(quantize),
            "equivalence_ce_max_pairs": equivalence_max_pairs,
            "equivalence_ask_floor": engine.clusters.ask_floor,
            "T3_default_budget": at_default,
            "quantized_equivalence": engine.config.quantize
            if quantize_equivalence is None
            else quantize_equivalence,
            **decisions.to_manifest(),
            "retrieval": {
                "perspectives": retrieval,
                "evidence": "links precomputed at index time (indexer.links), backed links",
            },
            "equivalence": _equivalence_label(pred),
            "evidence_scope": "clusters with at least one eId resolvable in the evidence pool",
            "reference_rows": [r.to_json() for r in reference],
            "retriever": ret_name,
            "seconds": round(time.perf_counter() - t0, 1),
        },
    )
    return result


def _equivalence_label(pred) -> str:
    if not (pred.t3 and "cosine" in pred.t3[0][1]):
        return "head"
    if "ce" in pred.t3[0][1]:
        return "stack over stored bi-encoder vectors + the equivalence cross-encoder"
    if "rel" in pred.t3[0][1]:
        return "stack over stored bi-encoder vectors + the relation model's equivalence head"
    return "stack over stored bi-encoder vectors"
