"""Would a dedicated equivalence cross-encoder lift T3? Trains one and measures it, in one run.

    python bench/equivalence_ce.py [--minutes 18] [--model models/pair] [--index default]

The shipped equivalence decision is a stack over stored bi-encoder vectors (no forward pass; dev
T3 62.9). This trains a claim-conditioned cross-encoder, sentence-transformers' CrossEncoder from
the packaged all-MiniLM-L6-v2, on pairs of one claim's perspectives from the fit claims ("claim
[SEP] A", B; same cluster or not, negatives sampled 3:1, one epoch or the time budget). It then
scores every T3 pair of the tune and dev claims in both orders and averages them. Last, it fits
the stack with and without that score on the tune claims and reports dev T3. It also reports
pairs/s, and how many pairs a search would have to score. The baseline is the shipped stack,
computed in the same run.

Measured once (2026-11-22, 18 min budget, 594 of 765 steps): CE alone T3 59.3, shipped stack 62.9,
stack + CE **66.5** (P 75.2 / R 59.6). Scoring ran at 89 pairs/s (both orders, 2 passes per
pair); scoring one order only gave 66.3 at 113 pairs/s. A pair can be skipped only when even the highest CE score on the tune pairs cannot lift it
over the cut, and that held for just 34 % of pairs at the equivalence cut and 66 % at the
clustering cut. So a search would pay about 0.2-0.5 s more; that is why it is not in the
pipeline yet (see the notes).
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect import perspectrum_eval as pe  # noqa: E402
from perspect.engine import Engine  # noqa: E402
from perspect.perspectrum import load_claims, load_perspectives  # noqa: E402
from reranker.equivalence_ce import training_rows  # noqa: E402
from reranker.model import PairModel  # noqa: E402
from reranker.st_training import train_cross_encoder  # noqa: E402
from reranker.stack import fit as fit_stack  # noqa: E402
from reranker.train import tune_claims_of  # noqa: E402
from retriever.dense import resolve_model  # noqa: E402
from retriever.searcher import Searcher  # noqa: E402

BASE = ["cosine", "agree", "resid", "jacc"]


def claim_pairs(c, persp):
    """The T3 pairs of a claim, in the order `perspectrum_eval.predict` emits them."""
    cl = {p: i for i, x in enumerate(c.clusters) for p in x.pids}
    pids = sorted(p for p in cl if p in persp)
    return [(pids[a], pids[b], cl[pids[a]] == cl[pids[b]]) for a, b in _combos(len(pids))]


def _combos(n):
    return list(itertools.combinations(range(n), 2))


def train(claims, persp, minutes: float, out: Path):
    rows = training_rows(claims, persp, random.Random(13))
    print(f"training pairs {len(rows)}, positives {int(sum(r[2] for r in rows))}", flush=True)
    t0 = time.perf_counter()
    model, trainer, _ = train_cross_encoder(
        rows,
        resolve_model("all-MiniLM-L6-v2"),
        out,
        max_length=128,
        batch_size=32,
        lr=4e-5,
        max_seconds=minutes * 60,
    )
    print(f"trained {trainer.state.global_step} steps in {time.perf_counter() - t0:.0f} s")
    return model


def score(model, claims, persp) -> np.ndarray:
    import torch

    out, n, t0 = [], 0, time.perf_counter()
    for c in claims:
        pairs = claim_pairs(c, persp)
        if not pairs:
            continue
        kw = {"batch_size": 64, "show_progress_bar": False, "activation_fn": torch.nn.Identity()}
        ab = model.predict([(f"{c.text} [SEP] {persp[a]}", persp[b]) for a, b, _ in pairs], **kw)
        ba = model.predict([(f"{c.text} [SEP] {persp[b]}", persp[a]) for a, b, _ in pairs], **kw)
        out.extend(((np.asarray(ab) + np.asarray(ba)) / 2).tolist())
        n += len(pairs)
    print(f"scored {n} pairs at {n / (time.perf_counter() - t0):.0f} pairs/s (both orders)")
    return np.array(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--model", default=str(ROOT / "models" / "pair"))
    ap.add_argument("--index", default="default")
    ap.add_argument("--minutes", type=float, default=18.0)
    ap.add_argument("--limit", type=int, default=None, help="first N claims of each set (smoke)")
    args = ap.parse_args()
    if not (Path(args.data) / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"PERSPECTRUM data not found at {args.data}", file=sys.stderr)
        return 2
    persp = load_perspectives(args.data)
    tune, fit = tune_claims_of(args.data)
    dev = load_claims(args.data, "dev")
    tune, fit, dev = tune[: args.limit], fit[: args.limit], dev[: args.limit]
    engine = Engine(Searcher(args.index), PairModel.load(args.model))
    preds = {
        name: pe.predict(engine, claims, persp, tasks=("stance", "equivalence"))
        for name, claims in (("tune", tune), ("dev", dev))
    }
    with tempfile.TemporaryDirectory(prefix="perspect-eqce-") as tmp:
        model = train(fit, persp, args.minutes, Path(tmp))
        for name, claims in (("tune", tune), ("dev", dev)):
            ce = score(model, claims, persp)
            assert len(ce) == len(preds[name].t3)
            for (_, f), x in zip(preds[name].t3, ce, strict=True):
                f["ce"] = float(x)

    def feats(rows, names):
        f = pe.pair_features(rows)
        f["ce"] = np.array([r[1]["ce"] for r in rows])
        return np.column_stack([f[n] for n in names])

    yt = np.array([g for g, _ in preds["tune"].t3])
    yd = np.array([g for g, _ in preds["dev"].t3])
    print("\n| equivalence decision | tune T3 F1 | dev T3 P / R / F1 |\n|---|---|---|")
    for names in (BASE, ["ce"], [*BASE, "ce"]):
        st = fit_stack(names, feats(preds["tune"].t3, names), yt)
        pt = st.prob(dict(zip(names, feats(preds["tune"].t3, names).T, strict=True)))
        pd = st.prob(dict(zip(names, feats(preds["dev"].t3, names).T, strict=True)))
        thr = max(pe.GRID, key=lambda t: pe._pairs(yt, pt, t).f1)
        d = pe._pairs(yd, pd, thr)
        label = "shipped stack (baseline)" if names == BASE else " + ".join(names)
        print(
            f"| {label} | {100 * pe._pairs(yt, pt, thr).f1:.1f} | "
            f"{100 * d.precision:.1f} / {100 * d.recall:.1f} / {100 * d.f1:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
