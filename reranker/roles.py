"""The four roles as `PairScorer`s over one `PairModel`, and the one place inputs are formatted.

Training and inference both build their pairs through `pair_for`, so a model never sees at query
time a layout it was not trained on.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspect.reranker.base import PairScorer
from perspect.reranker.model import PairModel

SEP = " [SEP] "


def pair_for(task: str, claim: str, text: str, other: str | None = None) -> tuple[str, str]:
    """(a, b) input of `task`: relevance/stance (claim, perspective); equivalence (claim,
    perspective A [SEP] perspective B); evidence (claim [SEP] perspective, paragraph)."""
    if task in ("relevance", "stance"):
        return claim, text
    if task == "equivalence":
        return claim, f"{text}{SEP}{other}"
    if task == "evidence":
        return f"{claim}{SEP}{text}", other or ""
    raise ValueError(f"unknown task {task!r}")


class _Role(PairScorer):
    def __init__(self, model: PairModel, task: str):
        self.model = model
        self.task = task
        self.threshold = model.threshold(task)

    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        return self.model.predict(pairs, [self.task], batch_size)[self.task]


class Relevance(_Role):
    def __init__(self, model: PairModel):
        super().__init__(model, "relevance")


class Stance(_Role):
    """P(support) of (claim, perspective); 1 - p is P(oppose)."""

    def __init__(self, model: PairModel):
        super().__init__(model, "stance")


class Equivalence(_Role):
    def __init__(self, model: PairModel):
        super().__init__(model, "equivalence")

    def score(self, claim: str, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """One order per pair: training swaps orders at random, so the head is near-symmetric and
        averaging both orders would double the cost for little gain."""
        return self.predict([pair_for("equivalence", claim, a, b) for a, b in pairs])


class Evidence(_Role):
    def __init__(self, model: PairModel):
        super().__init__(model, "evidence")

    def score(self, claim: str, perspective: str, paragraphs: Sequence[str]) -> np.ndarray:
        return self.predict([pair_for("evidence", claim, perspective, p) for p in paragraphs])


def relevance_and_stance(
    model: PairModel, claim: str, perspectives: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Both heads from one forward pass per batch."""
    pairs = [pair_for("relevance", claim, p) for p in perspectives]
    out = model.predict(pairs, ["relevance", "stance"])
    return out["relevance"], out["stance"]
