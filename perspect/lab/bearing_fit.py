"""The bearing head (issue 71): does a perspective bear on the claim *as written* (argues for it,
against it), only share its topic (no side), or miss it, learnt from the judged set
(docs/judged-set.md) beside the curated debates, and the cuts a search acts on.

Why a head over the trunk's pooled states, not a new trunk: every consumer already reads the
argument trunk's top pass (sides, whether a perspective takes a side, verdicts, mining, news), so
one more linear head costs a search nothing it does not pay already, and the other heads stay
exactly as they were (their dev figures unchanged). Rows: the judged (claim, perspective) pairs
both judges labelled alike, `train` claims to fit, `tune` claims to pick C and the cuts,
`report` claims only measured; beside them PERSPECTRUM train claims' curated perspectives
(`for` / `against` by their gold stance), so the head keeps what "written for" taught.

    python -m perspect.lab.bearing_fit --work DIR [--argument models/argument] [--write]

Over the shipped trunk it fits the linear head that starts the trunk's training
(`bearing_head.npz`); over a trunk with its own bearing head (perspect.lab.train.bearing),
`--write` puts the decision's stacks and the verdict cuts into the entry (re-packed in place).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from perspect.lab import bearing_stack as bs
from perspect.lab.bearing_stack import AGAINST, FOR, LABELS
from perspect.lab.judged import HERE, load_claims, perspective_texts, read_jsonl

HEAD = "bearing"
CURATED = 2000  # PERSPECTRUM train (claim, curated perspective) rows beside the judged ones
C_GRID = (0.0003, 0.001, 0.003, 0.01, 0.03, 0.1)
# the bears cut: the lowest whose tune precision reaches this (0.80 halves the reach)
BEARS_PRECISION = 0.70


def judged_rows() -> dict[str, list[tuple[str, str, int]]]:
    """(claim, perspective, label) per split, from the agreed labels."""
    claims = {c.id: c for c in load_claims()}
    ptext = perspective_texts()
    out: dict[str, list] = {"train": [], "tune": [], "report": []}
    for r in read_jsonl(HERE / "labels.jsonl"):
        if r["q"] != "cp" or not r.get("label"):
            continue
        pid = r["id"].split(":")[2]
        out[r["split"]].append((claims[r["claim"]].text, ptext[pid], LABELS.index(r["label"])))
    return out


def curated_rows(data: Path, n: int, seed: int = 71) -> list[tuple[str, str, int]]:
    """PERSPECTRUM train claims' curated perspectives (not its tune claims, which fit the
    pipeline's other cuts), `for` / `against` by their cluster's gold stance."""
    from perspect.core.datasets.perspectrum import load_perspectives, tune_claims_of

    texts = load_perspectives(data)
    rows = []
    for claim in tune_claims_of(data)[1]:
        for cl in claim.clusters:
            label = FOR if cl.stance == "SUPPORT" else AGAINST
            rows.extend((claim.text, texts[p], label) for p in cl.pids if p in texts)
    random.Random(seed).shuffle(rows)
    return rows[:n]


def probs(w: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    z = x.astype(np.float64) @ w.T.astype(np.float64) + b
    z = np.exp(z - z.max(1, keepdims=True))
    return z / z.sum(1, keepdims=True)


def fit(x, y, xt, yt, log=print):
    """(weight, bias, info): multinomial logistic regression over standardised pooled states, C
    picked by the tune claims' log-loss; the standardisation folded into the weights."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import log_loss

    mu, sd = x.mean(0), x.std(0) + 1e-6
    z, zt = (x - mu) / sd, (xt - mu) / sd
    best, scores, models = None, {}, {}
    for c in C_GRID:
        m = LogisticRegression(C=c, max_iter=3000).fit(z, y)
        scores[c] = round(float(log_loss(yt, m.predict_proba(zt), labels=range(4))), 4)
        models[c] = m
        log(f"  C={c:g}: tune log-loss {scores[c]}")
        if best is None or scores[c] < scores[best]:
            best = c
    m = models[best]
    w, b = m.coef_ / sd, m.intercept_ - (m.coef_ / sd) @ mu
    return w.astype(np.float32), b.astype(np.float32), {"C": best, "tune_log_loss": scores}


def run(args, log=print) -> dict:
    import hashlib

    import torch

    from perspect.lab.argument_eval import StateCache
    from perspect.lab.argument_heads import Features, _weights_key
    from perspect.pipeline.engine import Engine, EngineConfig
    from perspect.reranker import factory
    from perspect.retriever.searcher import Searcher

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    sets = judged_rows()
    sets["curated"] = curated_rows(args.data, CURATED)
    log("rows: " + ", ".join(f"{k} {len(v)}" for k, v in sets.items()))
    # the engine's own signals over each judged claim's candidates (the previous decision's)
    labels, split_of = bs.load_labels()
    claims = [c for c in load_claims() if any(k[0] == c.id for k in labels)]
    engine = Engine.load(Searcher(args.index, getattr(args, "home", None)),
                         config=EngineConfig(bearing=False))  # fmt: skip
    signals = bs.engine_signals(engine, claims, args.work, log)
    decisions, neither_at = engine.decisions, engine.arguing.cuts.neither_at
    cand = bs.rows_of(signals, labels, split_of)
    arg = factory.load(["trunk"], factory.TORCH, entries={"trunk": args.argument}).trunk
    served = factory.load(["trunk"], factory.Serving(), entries={"trunk": args.argument}).trunk
    lower = StateCache((served if served.served else arg).lower).get
    feats = Features(arg, lower, args.work / f"pooled-{_weights_key(arg)}")

    def pooled(name: str, pairs: list[tuple[str, str]]) -> np.ndarray:
        key = hashlib.sha1(json.dumps(pairs).encode()).hexdigest()[:10]
        return feats.of(f"{name}-{key}", pairs, False, log)

    x = {k: pooled(k, [(a, b) for a, b, _ in v]) for k, v in sets.items()}
    y = {k: np.array([r[2] for r in v], dtype=int) for k, v in sets.items()}
    texts = {c.id: c.text for c in load_claims()}
    xc = pooled("candidates", [(texts[r["claim"]], r["text"]) for r in cand])
    xf = np.concatenate([x["train"], x["curated"]])
    yf = np.concatenate([y["train"], y["curated"]])
    w, b, info = fit(xf, yf, x["tune"], y["tune"], log)
    head = {k: measure_head(probs(w, b, x[k]), y[k]) for k in ("tune", "report")}
    stacks = bs.fit_and_measure(cand, probs(w, b, xc), decisions, neither_at,
                                BEARS_PRECISION, log)  # fmt: skip
    report = {
        "rows": {k: len(v) for k, v in sets.items()},
        "fit": info,
        "head": head,
        "decision": stacks,
        "minutes": round((time.perf_counter() - t0) / 60, 1),
        "work": str(args.work),
    }
    (args.work / "bearing.json").write_text(json.dumps(report, indent=1) + "\n")
    np.savez(args.work / "bearing_head.npz", weight=w, bias=b)
    return report


def run_trained(args, log=print) -> dict:
    """The stacks over a trunk that has its own trained bearing head (perspect.lab.train.bearing):
    the engine's signals with that trunk, the previous decision's from `--previous` (the signals
    cache of the previous bundle), the verdict cuts refitted; written into the entry with
    `--write`."""
    import torch

    from perspect.lab import verdict_fit
    from perspect.pipeline.engine import Engine, EngineConfig
    from perspect.retriever.searcher import Searcher

    torch.set_num_threads(2)
    args.work.mkdir(parents=True, exist_ok=True)
    labels, split_of = bs.load_labels()
    claims = [c for c in load_claims() if any(k[0] == c.id for k in labels)]
    engine = Engine.load(Searcher(args.index, args.home), config=EngineConfig(bearing=False))
    signals = bs.engine_signals(engine, claims, args.work, log, bearing=True)
    cand = bs.rows_of(signals, labels, split_of)
    previous = None
    if args.previous is not None:
        prev = {r["claim"]: r for r in read_jsonl(args.previous)}
        previous = bs.rows_of(prev, labels, split_of)
    bearing = np.array([r["bearing"] for r in cand])
    y = np.array([r["y"] for r in cand])
    split = np.array([r["split"] for r in cand])
    head = {k: measure_head(bearing[split == k], y[split == k]) for k in ("tune", "report")}
    stacks = bs.fit_and_measure(cand, bearing, engine.decisions, engine.arguing.cuts.neither_at,
                                BEARS_PRECISION, log, previous)  # fmt: skip
    verdicts = verdict_fit.fit(engine.arguing.model, engine.arguing.cuts, log)
    report = {"head": head, "decision": stacks, "verdicts": verdicts, "work": str(args.work)}
    (args.work / "bearing.json").write_text(json.dumps(report, indent=1) + "\n")
    if args.write:
        write_decisions(args.argument, stacks, verdicts, report, log)
    return report


def write_decisions(entry: Path, stacks: dict, verdicts: dict, report: dict, log=print) -> None:
    """The bearing decision and the refitted verdict cuts into the entry's manifest, re-packed."""
    import shutil

    from perspect.core.model import bundle
    from perspect.core.model.bundle import sha256_file
    from perspect.lab.train import argument as trainer

    full = bundle.resolve(entry)
    trained = Path(report["work"]) / "trained"
    shutil.rmtree(trained, ignore_errors=True)
    shutil.copytree(full, trained, ignore=shutil.ignore_patterns("onnx"))
    man_path = trained / "manifest.json"
    man = json.loads(man_path.read_text())
    dec = man.setdefault("decisions", {})
    dec[HEAD] = {
        "bears": stacks["bears"], "side": stacks["side"], "consider": 30,
        "side_margin": stacks["side_margin"],
        "fitted_on": f"judged set: stacks on train claims' candidates, the bears cut on tune "
        f"claims' (precision >= {BEARS_PRECISION})",
        "rows": stacks["rows"], "tune": stacks["tune"], "report": stacks["report"],
    }  # fmt: skip
    arg = dec.setdefault("argument", {})
    arg["for_at"], arg["against_at"] = verdicts["for_at"], verdicts["against_at"]
    arg.setdefault("fitted_on", {})["judged_verdicts"] = {
        k: verdicts[k] for k in ("rows", "tune", "report")}  # fmt: skip
    files = {n: sha256_file(HERE / n) for n in ("labels.jsonl", "items.jsonl")}
    data = [d for d in man.get("data", []) if not str(d.get("file", "")).startswith("judged/")]
    man["data"] = [*data, *({"file": f"judged/{k}", "sha256": v} for k, v in files.items())]
    man.setdefault("dev_metrics", {})[HEAD] = {"head": report["head"]["report"],
                                                **stacks["report"]["bearing"]}  # fmt: skip
    man_path.write_text(json.dumps(man, indent=2) + "\n")
    trainer.pack(trained, Path(entry))
    log(f"{entry}: bearing decision and verdict cuts written")


def measure_head(p: np.ndarray, y: np.ndarray) -> dict:
    """The head alone on judged pairs: 4-way accuracy, AUROC of bears (for or against)."""
    from sklearn.metrics import roc_auc_score

    gold = (y == FOR) | (y == AGAINST)
    bears = p[:, FOR] + p[:, AGAINST]
    return {
        "rows": len(y),
        "accuracy4": round(float((p.argmax(1) == y).mean()), 4),
        "bears_auroc": round(float(roc_auc_score(gold, bears)), 4),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="feature cache (outside the repo)")
    ap.add_argument("--argument", type=Path, default=Path("models/argument"))
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument("--index", default="default", help="the index whose candidates are judged")
    ap.add_argument("--home", type=Path, default=None, help="where that index lives")
    ap.add_argument(
        "--previous",
        type=Path,
        default=None,
        help="the previous bundle's engine.jsonl (the baseline decision's signals)",
    )
    ap.add_argument(
        "--write",
        action="store_true",
        help="with a trained bearing head: write the decision into the entry",
    )
    args = ap.parse_args()
    from perspect.core.model import bundle
    from perspect.reranker.stance_trunk import read

    trained = HEAD in read(bundle.resolve(args.argument)).get("heads", {})
    (run_trained if trained else run)(args)


if __name__ == "__main__":
    main()
