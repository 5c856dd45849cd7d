"""Small logistic models that combine the pipeline's signals into one calibrated decision.

Why: on PERSPECTRUM the cross-encoder heads are not the only evidence. The packaged bi-encoder's
cosine (stored vectors, free at query time) decides equivalence far better than the trained
equivalence head (dev T3 F1 50.6 vs 35.1), and retrieval agreement helps relevance. Each decision
is a logistic regression over named features, fitted on the held-out *train* "tune" claims, with
the threshold that maximises that task's F1 there. Saved in the pair model's manifest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Stack:
    features: tuple[str, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float = 0.5
    # each feature's mean on the rows it was fitted on, where some lacked it: what a row without
    # the feature (NaN, or the feature absent) is read as. Why: a signal stored at index time
    # (the joint reader's judgment of an evidence link) is missing from an index written before
    # it, or from links added without the model; the stack still scores them, as its average
    # row would. Empty for stacks whose features every row has.
    fills: tuple[float, ...] = ()

    def prob(self, feats: dict[str, np.ndarray]) -> np.ndarray:
        n = len(next(iter(feats.values()))) if feats else 0
        z = np.full(n, self.intercept)
        fills = dict(zip(self.features, self.fills, strict=False))
        for name, w in zip(self.features, self.coef, strict=True):
            if name not in feats and name in fills:
                z = z + w * fills[name]
                continue
            x = np.asarray(feats[name], dtype=np.float64)
            if name in fills:
                x = np.where(np.isnan(x), fills[name], x)
            z = z + w * x
        return 1.0 / (1.0 + np.exp(-z))

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["features"] = list(self.features)
        d["coef"] = list(self.coef)
        d["fills"] = list(self.fills)
        if not self.fills:
            del d["fills"]
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Stack:
        return cls(
            tuple(d["features"]),
            tuple(d["coef"]),
            float(d["intercept"]),
            d["threshold"],
            tuple(float(v) for v in d.get("fills", ())),
        )

    def with_threshold(self, t: float) -> Stack:
        return replace(self, threshold=float(t))


def fit(features: Sequence[str], X: np.ndarray, y: np.ndarray, l2: float = 1e-4) -> Stack:
    """L2-regularised logistic regression by LBFGS (torch is already here; no sklearn needed).
    l2=1e-4 on the mean loss was chosen on the tune claims (T1 55.2 vs 54.4 with 1e-3). A NaN
    (a row without that feature) is read as the feature's mean, kept as the stack's `fills`."""
    import torch

    X = np.asarray(X, dtype=np.float64).reshape(len(y), len(features))
    fills: tuple[float, ...] = ()
    if np.isnan(X).any():
        means = np.nan_to_num(np.nanmean(np.where(np.isnan(X).all(0), 0.0, X), axis=0))
        X = np.where(np.isnan(X), means, X)
        fills = tuple(round(float(v), 6) for v in means)
    if len(set(np.asarray(y).tolist())) < 2:
        return Stack(tuple(features), tuple(0.0 for _ in features), 0.0, fills=fills)
    xt = torch.tensor(X)
    yt = torch.tensor(np.asarray(y, dtype=np.float64))
    w = torch.zeros(X.shape[1], dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(xt @ w + b, yt)
        loss = loss + l2 * (w**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    coef = tuple(float(v) for v in w.detach())
    return Stack(tuple(features), coef, float(b.item()), fills=fills)


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))
