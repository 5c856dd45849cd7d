"""Would a dedicated evidence cross-encoder lift T4? Trains one and measures it, in one run.

    python bench/evidence_ce.py [--minutes 20] [--model models/pair] [--index default]

T4 marks the paragraphs that back a perspective among its links, precomputed at index time
(indexer.links), scored by a stack over the link's fused RRF score and cosine (dev T4 50.8). The
correct paragraph is the first link for only about half of the clusters, so the ranking of the
links is the limit. This trains sentence-transformers' CrossEncoder from the packaged
all-MiniLM-L6-v2 on (perspective, paragraph) pairs of the fit claims: gold paragraphs against
the perspective's other links (no claim in the input: links are computed at index time, when there
is no claim). It then scores the links of the tune and dev clusters, fits the evidence stack with
and without that score on the tune claims (cut, delta, k re-tuned for each) and reports dev T4.
The baseline, the shipped stack, is computed in the same run. It also reports pairs/s, which is
what scoring every link of the pool at index time would cost.

Measured once (2026-11-22, 15 min budget, 128 tokens, 203 of 225 steps, 7170 training pairs from
1258 fit clusters): the training loss stayed at the base rate's entropy (0.64 at 33 % positives),
so the model learned next to nothing. Dev T4 with 5 links per cluster: shipped stack 50.1, the
cross-encoder alone 32.1, stack + cross-encoder 50.0. Scoring ran at 26-29 pairs/s, so scoring the
pool's 55k links at index time would take about 35 minutes. Not in the pipeline: no gain.

Measured again (2026-11-22, seventh session) starting from the equivalence cross-encoder, which
already compares two texts (`--base models/equivalence --epochs 3 --minutes 35 --max-length 160
--lr 5e-5`; 385 steps, 1.7 epochs, in 35 min): the loss went from 0.64 to 0.57, so this one
learned. Tune / dev T4 F1, stack and rule re-fitted on tune for each row:

| links per cluster | shipped stack | cross-encoder alone | stack + cross-encoder |
|---|---|---|---|
| 5 | 51.3 / 51.3 | 47.1 / 41.8 | 54.2 / 51.3 |
| 3 (shipped) | 51.0 / 52.1 | 48.6 / 46.1 | 53.5 / 52.1 |

It lifts the tune claims the stack is fitted on by 2.5-2.9 and dev by nothing, at 35 minutes of
index-time scoring. Not in the pipeline.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect import perspectrum_eval as pe  # noqa: E402
from perspect.engine import LINK_VALUES, Engine, EngineConfig  # noqa: E402
from perspect.perspectrum import load_claims, load_evidence, load_perspectives  # noqa: E402
from reranker.model import PairModel  # noqa: E402
from reranker.st_training import train_cross_encoder  # noqa: E402
from reranker.train import tune_claims_of  # noqa: E402
from retriever.dense import resolve_model  # noqa: E402
from retriever.searcher import Searcher  # noqa: E402


def cluster_links(engine, claims, persp, evidence):
    """Per cluster with resolvable gold: (gold ids, representative text, its links)."""
    out = []
    for c in claims:
        for cl in c.clusters:
            gold = sorted(e for e in cl.evidence if e in evidence)
            pids = [str(p) for p in cl.pids if p in persp]
            if not gold or not pids:
                continue
            links = engine.group_links([pids])[0][0]
            rep = next((p for p in pids if engine._links([p]).get(p)), pids[0])
            out.append((gold, persp[int(rep)], [(int(x[0]), *x[1:]) for x in links]))
    return out


def training_rows(rows, evidence, rng, max_rows: int):
    pairs = []
    for gold, text, links in rows:
        for e in gold:
            pairs.append((text, evidence[e], 1.0))
        for e, *_ in links:
            if e not in gold:
                pairs.append((text, evidence[e], 0.0))
    rng.shuffle(pairs)
    return pairs[:max_rows]


def train(rows, minutes: float, max_length: int, out: Path, base: str, lr: float, epochs: int):
    print(f"training pairs {len(rows)}, positives {int(sum(r[2] for r in rows))}", flush=True)
    t0 = time.perf_counter()
    model, trainer, _ = train_cross_encoder(
        rows,
        base,
        out,
        max_length=max_length,
        batch_size=32,
        lr=lr,
        epochs=epochs,
        max_seconds=minutes * 60,
    )
    print(f"trained {trainer.state.global_step} steps in {time.perf_counter() - t0:.0f} s")
    return model


def score(model, rows, evidence):
    pairs = [(text, evidence[e]) for _, text, links in rows for e, *_ in links]
    t0 = time.perf_counter()
    got = model.predict(pairs, batch_size=32, show_progress_bar=False)
    print(f"scored {len(pairs)} links at {len(pairs) / (time.perf_counter() - t0):.1f} pairs/s")
    it = iter(np.asarray(got, dtype=np.float64).tolist())
    return [(g, [(*x, next(it)) for x in links]) for g, _, links in rows]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "perspectrum"))
    ap.add_argument("--model", default=str(ROOT / "models" / "pair"))
    ap.add_argument("--index", default="default")
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--max-length", type=int, default=192)
    ap.add_argument("--max-rows", type=int, default=12000)
    ap.add_argument(
        "--base",
        default=None,
        help="encoder or cross-encoder to start from (default: the packaged all-MiniLM-L6-v2; "
        "models/equivalence starts from a cross-encoder that already compares two texts)",
    )
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--save", default=None, help="keep the trained cross-encoder in this folder")
    ap.add_argument(
        "--load", default=None, help="score with this trained cross-encoder (no training)"
    )
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--links", type=int, default=5, help="links per cluster considered")
    ap.add_argument("--limit", type=int, default=None, help="first N claims of each set (smoke)")
    args = ap.parse_args()
    if not (Path(args.data) / "perspectrum_with_answers_v1.0.json").is_file():
        print(f"PERSPECTRUM data not found at {args.data}", file=sys.stderr)
        return 2
    persp, evidence = load_perspectives(args.data), load_evidence(args.data)
    tune, fit = tune_claims_of(args.data)
    dev = load_claims(args.data, "dev")
    tune, fit, dev = tune[: args.limit], fit[: args.limit], dev[: args.limit]
    cfg = EngineConfig(evidence_per_cluster=args.links)
    engine = Engine(Searcher(args.index), PairModel.load(args.model), cfg)
    rows = {
        n: cluster_links(engine, c, persp, evidence)
        for n, c in (("fit", fit), ("tune", tune), ("dev", dev))
    }
    for n, r in rows.items():
        first = np.mean([bool(links) and links[0][0] in g for g, _, links in r])
        anyk = np.mean([any(x[0] in g for x in links) for g, _, links in r])
        print(
            f"{n}: {len(r)} clusters; gold first {100 * first:.1f} %, in links {100 * anyk:.1f} %"
        )
    with tempfile.TemporaryDirectory(prefix="perspect-evce-") as tmp:
        if args.load:
            from sentence_transformers.cross_encoder import CrossEncoder

            model = CrossEncoder(args.load, device="cpu")
        else:
            model = train(
                training_rows(rows["fit"], evidence, random.Random(13), args.max_rows),
                args.minutes,
                args.max_length,
                Path(tmp),
                args.base or resolve_model("all-MiniLM-L6-v2"),
                args.lr,
                args.epochs,
            )
        if args.save and not args.load:
            model.save(args.save)
        scored = {n: score(model, rows[n], evidence) for n in ("tune", "dev")}

    def variant(names):
        """Links as the engine scores them, (id, fused, cosine, reverse margin[, ce]); a left-out
        signal is a constant 0, which an L2-regularised stack gives no weight."""

        def keep(x):
            vals = zip(LINK_VALUES, x[1:], strict=True)
            return (x[0], *(v if n in names else 0.0 for n, v in vals))

        return [
            [(g, [keep(x) if "ce" in names else keep(x)[:4] for x in links]) for g, links in r]
            for r in (scored["tune"], scored["dev"])
        ]

    print("\n| link score | tune T4 F1 | dev T4 P / R / F1 | rule |\n|---|---|---|---|")
    for names in (("rrf", "cos", "rmargin"), ("ce",), ("rrf", "cos", "rmargin", "ce")):
        t, d = variant(names)
        thr, stacks = pe.tune(pe.Predictions(t4=t))
        rule = pe.evidence_rule(thr, stacks)
        st = stacks["evidence"]
        a, b = pe._t4(t, *rule, st), pe._t4(d, *rule, st)
        label = "shipped stack (baseline)" if "ce" not in names else " + ".join(names)
        print(
            f"| {label} | {100 * a.f1:.1f} | {100 * b.precision:.1f} / {100 * b.recall:.1f} / "
            f"{100 * b.f1:.1f} | {rule} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
