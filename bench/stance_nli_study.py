"""Does the relation model's inference head help the stance decision? A study, one run:

the shipped stack (trunk logit + pair head logit) against stacks that also read the inference
head's entailment and contradiction logits of (claim, perspective), in the claim -> perspective
order (free: the same top pass gives every head) and the perspective -> claim order (one more
pass). Fitted on the tune claims' gold perspectives (held-out train), reported on dev, with each
claim beside its negation (the flip: a side that moves when the claim is negated).

    python bench/stance_nli_study.py [--data data/perspectrum] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from perspect.core.datasets.negation import negate  # noqa: E402
from perspect.core.datasets.perspectrum import (  # noqa: E402
    load_claims,
    load_perspectives,
    tune_claims_of,
)
from perspect.core.model.decision_stack import logit  # noqa: E402
from perspect.lab.train.stance_trunk import stance_metrics  # noqa: E402
from perspect.pipeline.stance import StanceScorer  # noqa: E402
from perspect.reranker import factory  # noqa: E402
from perspect.reranker.stance_trunk import calibrated  # noqa: E402


def rows(claims, persp, scorer: StanceScorer):
    """Per gold perspective: features for the claim and for its negation, and the gold side."""
    trunk = scorer.trunk
    out = {"claim": [], "negated": []}
    ys = []
    for c in claims:
        gp = [
            (persp[p], cl.stance == "SUPPORT") for cl in c.clusters for p in cl.pids if p in persp
        ]
        if not gp:
            continue
        texts = [t for t, _ in gp]
        states = trunk.lower(texts)
        for key, claim in (("claim", c.text), ("negated", negate(c.text))):
            cs = trunk.claim_lower(claim)
            fwd = trunk.every_head([cs] * len(states), states)
            back = trunk.every_head(states, [cs] * len(states))
            head = scorer.head(claim, texts)
            out[key].append(
                {
                    "trunk": logit(fwd["stance"]),
                    "head": logit(head),
                    "shipped": calibrated(scorer.model.manifest, fwd["stance"], head),
                    "e_cp": logit(fwd["nli"][:, 0]),
                    "c_cp": logit(fwd["nli"][:, 2]),
                    "e_pc": logit(back["nli"][:, 0]),
                    "c_pc": logit(back["nli"][:, 2]),
                    "s_pc": logit(back["stance"]),
                }
            )
        ys += [s for _, s in gp]
    cat = {k: {f: np.concatenate([r[f] for r in v]) for f in v[0]} for k, v in out.items()}
    return cat, np.array(ys, dtype=float)


SETS = {
    "shipped stack (trunk + head)": None,
    "refit: trunk + head": ("trunk", "head"),
    "+ NLI claim->persp": ("trunk", "head", "e_cp", "c_cp"),
    "+ NLI persp->claim": ("trunk", "head", "e_pc", "c_pc"),
    "+ NLI both orders": ("trunk", "head", "e_cp", "c_cp", "e_pc", "c_pc"),
    "+ NLI both + stance persp->claim": ("trunk", "head", "e_cp", "c_cp", "e_pc", "c_pc", "s_pc"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("data/perspectrum"))
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    persp = load_perspectives(args.data)
    tune = tune_claims_of(args.data)[0][: args.limit]
    dev = load_claims(args.data, "dev")[: args.limit]
    models = factory.load(["pair", "trunk"], factory.Serving())
    scorer = StanceScorer(models.pair, models.trunk)
    tr, ytr = rows(tune, persp, scorer)
    dv, ydv = rows(dev, persp, scorer)
    report = {"tune_pairs": len(ytr), "dev_pairs": len(ydv)}
    for name, feats in SETS.items():
        if feats is None:
            p, pn = dv["claim"]["shipped"], dv["negated"]["shipped"]
            coef = None
        else:
            X = np.stack([tr["claim"][f] for f in feats], 1)
            Xn = np.stack([tr["negated"][f] for f in feats], 1)
            # the negated claims' pairs with the flipped side: what the flip asks of the decision
            lr = LogisticRegression(C=1.0, max_iter=1000).fit(
                np.concatenate([X, Xn]), np.concatenate([ytr, 1 - ytr])
            )
            p = lr.predict_proba(np.stack([dv["claim"][f] for f in feats], 1))[:, 1]
            pn = lr.predict_proba(np.stack([dv["negated"][f] for f in feats], 1))[:, 1]
            coef = dict(zip(feats, np.round(lr.coef_[0], 3).tolist(), strict=True))
        report[name] = {**stance_metrics(0.5, ydv, p, pn), "coef": coef}
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
