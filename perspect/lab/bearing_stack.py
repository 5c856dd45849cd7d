"""The bearing decision's stacks (issue 71), fitted on what the engine itself computes for each
judged claim's candidates: the relevance stack's P(relevant), the argument trunk's neither and
bearing heads, the stance decision's P(support); then measured on the report claims beside the
previous decision (the relevance cut, then the neither cut, the stance decision's side).

Why the engine's own signals: a cut is only as good as the numbers it is applied to at search
time; fitting it on the same candidates (the fused top 30), scored by the same code, is what
`perspect.lab.perspectrum_eval` does for the curated claims.

The engine's signals are cached per claim under the work folder (they do not depend on the
bearing head); the pooled states of every candidate pair too, so a refit of the head (more
judged labels) re-reads none of them.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from perspect.core.model.decision_stack import fit as fit_stack
from perspect.lab.judged import HERE, load_claims, read_jsonl
from perspect.lab.verdict_fit import precision_cut

LABELS = ("for", "against", "no_side", "off_topic")  # the bearing head's columns, the form's cp
FOR, AGAINST, NO_SIDE, OFF = range(4)
FEATURES = ("rel", "bear", "neither")
SIDE_FEATURES = ("side_bear", "support")
CANDIDATES = 30


def engine_signals(engine, claims, work: Path, log=print, bearing: bool = False) -> dict[str, dict]:
    """claim id -> {"ids", "texts", "rel", "argument", "support", "relevance_cut"}: the engine's
    signals over its candidates (previous decision's inputs), cached in `work/engine.jsonl`."""
    from perspect.pipeline import relevance

    path = work / "engine.jsonl"
    got = {r["claim"]: r for r in read_jsonl(path)}
    todo = [c for c in claims if c.id not in got]
    t0 = time.perf_counter()
    with path.open("a", encoding="utf-8") as f:
        for n, c in enumerate(todo):
            found = engine.retrieve(c.text, CANDIDATES)
            hits = found.hits
            if not hits:
                row = {"claim": c.id, "ids": [], "texts": [], "rel": [], "argument": [],
                       "support": [], "stance_head": []}  # fmt: skip
            else:
                first = relevance.judge(engine.model, engine.decisions, found.query, hits,
                                        engine.dense, engine.config.rrf_k)  # fmt: skip
                cs = engine.claim_states(c.text)
                states = engine.arguing.lower([h.text for h in hits], [h.id for h in hits])
                arg = engine.arguing.model.judge([cs] * len(hits), states)
                sup = engine.stance(c.text, [h.text for h in hits], [h.id for h in hits],
                                    np.asarray(first.stance))  # fmt: skip
                if bearing:  # the trunk's own bearing head, from the same top pass
                    every = engine.arguing.model.trunk.every_head([cs] * len(hits), states)
                    extra = {"bearing": every["bearing"].tolist()}
                else:
                    extra = {}
                row = {"claim": c.id, "ids": [h.id for h in hits], "texts": [h.text for h in hits], **extra,
                       "rel": first.relevance.tolist(), "argument": arg.tolist(),
                       "support": np.asarray(sup).tolist(), "stance_head": first.stance.tolist()}  # fmt: skip
            f.write(json.dumps(row) + "\n")
            f.flush()
            got[c.id] = row
            if n % 25 == 0:
                rate = (n + 1) / (time.perf_counter() - t0)
                log(f"engine signals: {n + 1}/{len(todo)} claims, {rate:.2f}/s")
    return got


def rows_of(signals: dict, labels: dict, split_of: dict) -> list[dict]:
    """One row per candidate with a judged label: its claim's split, label and signals."""
    out = []
    for cid, s in signals.items():
        for i, pid in enumerate(s["ids"]):
            lab = labels.get((cid, pid))
            if lab is None:
                continue
            out.append({"claim": cid, "split": split_of[cid], "pid": pid, "text": s["texts"][i],
                        "y": LABELS.index(lab), "rel": s["rel"][i], "argument": s["argument"][i],
                        "support": s["support"][i], "rank": i,
                       **({"bearing": s["bearing"][i]} if "bearing" in s else {})})  # fmt: skip
    return out


def _logit(p):
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def feats(rows: list[dict], bearing: np.ndarray) -> dict[str, np.ndarray]:
    arg = np.array([r["argument"] for r in rows]).reshape(-1, 3)
    share = bearing[:, FOR] / np.maximum(bearing[:, FOR] + bearing[:, AGAINST], 1e-9)
    return {
        "rel": _logit([r["rel"] for r in rows]),
        "bear": _logit(bearing[:, FOR] + bearing[:, AGAINST]),
        "neither": _logit(arg[:, 2]),
        "side_bear": _logit(share),
        "support": _logit([r["support"] for r in rows]),
    }


def shown_figures(y: np.ndarray, kept: np.ndarray, side: np.ndarray, unclear: np.ndarray,
                  claims: np.ndarray) -> dict:  # fmt: skip
    """What a reader meets among the candidates shown: of those shown on a side, right / wrong /
    no side / off the topic, and unclear; claims with anything shown, with both sides."""
    sided = kept & ~unclear
    right = sided & (((y == FOR) & (side == 1)) | ((y == AGAINST) & (side == 0)))
    wrong = sided & (((y == FOR) & (side == 0)) | ((y == AGAINST) & (side == 1)))
    n = max(1, int(sided.sum()))
    per_claim = {}
    for c in set(claims.tolist()):
        m = (claims == c) & sided
        per_claim[c] = (bool(m.any()), bool((side[m] == 1).any() and (side[m] == 0).any()))
    return {
        "shown": int(kept.sum()),
        "sided": int(sided.sum()),
        "right": round(float(right.sum()) / n, 4),
        "wrong": round(float(wrong.sum()) / n, 4),
        "no_side": round(float((sided & (y == NO_SIDE)).sum()) / n, 4),
        "off_topic": round(float((sided & (y == OFF)).sum()) / n, 4),
        "unclear_share": round(float((kept & unclear).sum()) / max(1, int(kept.sum())), 4),
        "claims": len(per_claim),
        "claims_answered": round(sum(a for a, _ in per_claim.values()) / max(1, len(per_claim)), 4),
        "claims_both_sides": round(
            sum(b for _, b in per_claim.values()) / max(1, len(per_claim)), 4
        ),
    }


def side_margin(p: np.ndarray, gold_for: np.ndarray, accuracy: float) -> float:
    """The smallest half-width m around .5 whose sides read outside it (P(for) >= .5 + m or
    <= .5 - m) are at least `accuracy` right on the rows given (tune claims' kept, bearing)."""
    for m in np.arange(0.0, 0.5, 0.01):
        sided = np.abs(p - 0.5) >= m
        if sided.sum() < 20:
            break
        if float(((p >= 0.5) == gold_for)[sided].mean()) >= accuracy:
            return round(float(m), 2)
    return 0.5


def unsure(p: np.ndarray, margin: float, side_cut: float) -> np.ndarray:
    """P(for) with those inside the margin set to the side cut: "unclear" as a cluster."""
    p = np.asarray(p, dtype=np.float64).copy()
    p[np.abs(p - 0.5) < margin] = side_cut
    return p


SIDE_ACCURACY = 0.9  # the side margin: sides shown at least this often right on tune claims


def fit_and_measure(rows: list[dict], bearing: np.ndarray, decisions, neither_at: float,
                    bears_precision: float, log=print, previous: list[dict] | None = None,
                    side_accuracy: float = SIDE_ACCURACY) -> dict:  # fmt: skip
    """The two stacks fitted on the train claims' rows, the bears cut on the tune claims' (the
    lowest at `bears_precision`), the side band the pair model's (Decisions.side); figures on
    tune and report beside the previous decision."""
    y = np.array([r["y"] for r in rows])
    split = np.array([r["split"] for r in rows])
    claims = np.array([r["claim"] for r in rows])
    f = feats(rows, bearing)
    gold_bears = (y == FOR) | (y == AGAINST)
    tr, tu = split == "train", split == "tune"
    X = np.stack([f[k] for k in FEATURES], 1)
    bears = fit_stack(FEATURES, X[tr], gold_bears[tr].astype(float))
    pb = bears.prob(f)
    bears = bears.with_threshold(precision_cut(pb[tu], gold_bears[tu], bears_precision, least=20))
    sided_tr = tr & gold_bears
    Xs = np.stack([f[k] for k in SIDE_FEATURES], 1)
    side = fit_stack(SIDE_FEATURES, Xs[sided_tr], (y[sided_tr] == FOR).astype(float))
    ps = side.prob(f)
    margin = side_margin(ps[tu & gold_bears & (pb >= bears.threshold)],
                         y[tu & gold_bears & (pb >= bears.threshold)] == FOR, side_accuracy)  # fmt: skip
    ps = unsure(ps, margin, decisions.stance_side)
    names, counts = np.unique(split, return_counts=True)
    out = {"bears": bears.to_json(), "side": side.to_json(), "side_margin": margin,
           "rows": {str(k): int(v) for k, v in zip(names, counts, strict=True)}}  # fmt: skip
    base = {(r["claim"], r["pid"]): r for r in (previous or rows)}
    rows0 = [base.get((r["claim"], r["pid"]), r) for r in rows]
    rel = np.array([r["rel"] for r in rows0])
    sup = np.array([r["support"] for r in rows0])
    arg_neither = np.array([r["argument"][2] for r in rows0])
    for name in ("tune", "report"):
        m = split == name
        lean = np.array([decisions.side(float(s))[0] for s in ps[m]])
        new = shown_figures(y[m], pb[m] >= bears.threshold, (lean == "support").astype(int),
                            lean == "unclear", claims[m])  # fmt: skip
        lean0 = np.array([decisions.side(float(s))[0] for s in sup[m]])
        kept0 = (rel[m] >= decisions.relevance) & (arg_neither[m] < neither_at)
        old = shown_figures(y[m], kept0, (lean0 == "support").astype(int), lean0 == "unclear",
                            claims[m])  # fmt: skip
        out[name] = {"bearing": new, "previous": old}
        log(f"{name}: bearing {json.dumps(new)}\n{name}: previous {json.dumps(old)}")
    return out


def load_labels() -> tuple[dict, dict]:
    claims = load_claims()
    split_of = {c.id: c.split for c in claims}
    labels = {}
    for r in read_jsonl(HERE / "labels.jsonl"):
        if r["q"] == "cp" and r.get("label"):
            labels[(r["claim"], r["id"].split(":")[2])] = r["label"]
    return labels, split_of
