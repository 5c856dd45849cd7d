"""The one interface every pairwise model implements (rerankers' `BaseRanker` idea).

A scorer takes (a, b) text pairs and returns calibrated probabilities in [0, 1]; `threshold` is the
decision point tuned on held-out data and saved with the model. What `a` and `b` mean is the role's
business (claim/perspective, claim+perspective/paragraph, ...), see `reranker.roles`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class PairScorer(ABC):
    task: str
    threshold: float = 0.5

    @abstractmethod
    def predict(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """Calibrated P(positive) for each pair."""

    def decide(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        return self.predict(pairs) >= self.threshold
