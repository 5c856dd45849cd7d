"""Would the relation model's equivalence head over the stored lower states ("rel") replace the
equivalence cross-encoder ("ce") in the equivalence stack? PERSPECTRUM T3 (pairwise and over the
engine's clusters) on dev, both on one index in one run, and under budgets of scored pairs.

    python bench/equivalence_rel.py [--index default] [--home indexes] [--budgets 24,48,96]

"rel": every pair of each claim's gold perspectives scored by the head (one canonical order: the
two orders correlate .99 and their mean measured the same), the stack, its cut, the cluster cut
and the stance margin fitted on the held-out train claims ("tune") exactly as calibration fits them
(perspectrum_eval.tune), dev scored. "ce": the shipped decisions, the cross-encoder scored (both
orders) on every dev pair whose stacked probability could reach a cut (the others cannot change
a decision). About 20 min of the relation head and 15 of the cross-encoder on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.core.datasets.perspectrum import (  # noqa: E402
    load_claims,
    load_perspectives,
    tune_claims_of,
)
from perspect.core.model.decision_stack import Stack  # noqa: E402
from perspect.core.model.decisions import Decisions  # noqa: E402
from perspect.lab import perspectrum_eval as pe  # noqa: E402
from perspect.pipeline.engine import Engine, EngineConfig  # noqa: E402
from perspect.reranker import factory  # noqa: E402
from perspect.retriever.searcher import Searcher  # noqa: E402


def rel_rows(searcher, claims, perspectives) -> pe.Predictions:
    """T3 rows with the relation head's score ("rel"): an engine whose pair model names no
    cross-encoder and whose stack reads "rel" (a placeholder: the fit replaces it)."""
    pair = factory.load(["pair"], factory.Serving()).pair
    pair.manifest.pop("equivalence_ce", None)
    placeholder = Stack(("cosine", "rel"), (0.0, 0.0), 0.0)
    pair.manifest["stacks"]["equivalence"] = placeholder.to_json()
    engine = Engine.load(searcher, pair, EngineConfig())
    return pe.predict(engine, claims, perspectives, tasks=("stance", "equivalence"))


def ce_dev(searcher, claims, perspectives, rows: pe.Predictions):
    """`rows` (the dev rows) with the cross-encoder's score instead, and the shipped decisions."""
    models = factory.load(["pair", "equivalence"], factory.Serving())
    d = Decisions.from_manifest(models.pair.manifest)
    st = d.stacks["equivalence"]
    base = [(g, {k: v for k, v in f.items() if k != "rel"}) for g, f in rows.t3]
    hi = st.prob({**pe.pair_features(base), "ce": np.ones(len(base))})
    need = hi >= min(d.cluster, d.equivalence)
    ce = np.zeros(len(base))
    for c, (start, _n, pp) in zip(claims, rows.t3_claims, strict=True):
        pids = sorted({p for cl in c.clusters for p in cl.pids if p in perspectives})
        idx = [j for j in range(len(pp)) if need[start + j]]
        if idx:
            pairs = [(perspectives[pids[pp[j][0]]], perspectives[pids[pp[j][1]]]) for j in idx]
            ce[[start + j for j in idx]] = models.equivalence.predict(c.text, pairs)
    out = pe.Predictions(t2=rows.t2, t3_claims=rows.t3_claims)
    out.t3 = [(g, {**f, "ce": float(x)}) for (g, f), x in zip(base, ce, strict=True)]
    return out, d


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default="default")
    ap.add_argument("--home", default=str(ROOT / "indexes"))
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--budgets", default="24,48,96")
    args = ap.parse_args()
    data = Path(args.data)
    if not (data / "dataset_split_v1.0.json").is_file():
        print(f"skip: no PERSPECTRUM data in {data}")
        return 0
    perspectives = load_perspectives(data)
    dev, tune = load_claims(data, "dev"), tune_claims_of(data)[0]
    searcher = Searcher(args.index, home=args.home)
    rel_tune = rel_rows(searcher, tune, perspectives)
    rel_dev = rel_rows(searcher, dev, perspectives)
    d_rel = pe.tune(rel_tune)
    ce_rows, d_ce = ce_dev(searcher, dev, perspectives, rel_dev)
    searcher.close()
    print(f"# Equivalence model: dev T3 pairs / clusters F1, index {args.index}, one run\n")
    print(
        "| model | every pair | "
        + " | ".join(f"budget {b}" for b in args.budgets.split(","))
        + " |"
    )
    print("|---|---|" + "---|" * len(args.budgets.split(",")))
    for name, rows, d in (
        ("cross-encoder (shipped)", ce_rows, d_ce),
        ("relation head", rel_dev, d_rel),
    ):
        cells = [pe.score(rows, d)]
        cells += [pe.t3_budgeted(rows, d, int(b)) for b in args.budgets.split(",")]
        print(
            f"| {name} | "
            + " | ".join(f"{100 * c['T3'].f1:.2f} / {100 * c['T3_clusters'].f1:.2f}" for c in cells)
            + " |"
        )
    tuned = pe.score(rel_tune, d_rel)
    print(
        f"\nrelation head on tune: {100 * tuned['T3'].f1:.2f} / {100 * tuned['T3_clusters'].f1:.2f}"
        f" (stack {dict(zip(d_rel.stacks['equivalence'].features, np.round(d_rel.stacks['equivalence'].coef, 2), strict=True))})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
