"""PERSPECTRUM metrics exactly as defined in Chen et al. 2019, section 5.

All functions take plain ids so they can be tested on hand-made cases and reused by `bench/` and
`perspect eval`. Scores are fractions in [0, 1]; reports multiply by 100.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)

    def to_json(self, scale: float = 100.0) -> dict[str, float]:
        return {
            "precision": round(self.precision * scale, 2),
            "recall": round(self.recall * scale, 2),
            "f1": round(self.f1 * scale, 2),
        }


def claim_pr(returned: Sequence[int], clusters: Sequence[Iterable[int]]) -> tuple[float, float]:
    """T1 / T4 for one query: precision of what was returned, recall over gold clusters.

    A returned item is correct if it belongs to any gold cluster; a cluster is recalled if any of its
    members was returned. Returning nothing scores precision 0 (no free precision for silence).
    """
    gold = [set(c) for c in clusters]
    if not gold:
        raise ValueError("a claim with no gold clusters cannot be scored")
    every = set().union(*gold)
    ret = list(dict.fromkeys(returned))
    precision = sum(1 for x in ret if x in every) / len(ret) if ret else 0.0
    recall = sum(1 for c in gold if c & set(ret)) / len(gold)
    return precision, recall


def macro(pairs: Iterable[tuple[float, float]]) -> PRF:
    """Average per-claim precision and recall; F1 is computed from the two averages (the paper's)."""
    pairs = list(pairs)
    if not pairs:
        return PRF(0.0, 0.0)
    return PRF(sum(p for p, _ in pairs) / len(pairs), sum(r for _, r in pairs) / len(pairs))


def binary_prf(gold: Sequence[bool], pred: Sequence[bool]) -> PRF:
    """Precision/recall of the positive class (T2 stance, T3 equivalence)."""
    tp = sum(1 for g, p in zip(gold, pred, strict=True) if g and p)
    fp = sum(1 for g, p in zip(gold, pred, strict=True) if not g and p)
    fn = sum(1 for g, p in zip(gold, pred, strict=True) if g and not p)
    return PRF(tp / (tp + fp) if tp + fp else 0.0, tp / (tp + fn) if tp + fn else 0.0)


TASK_NAMES = {
    "T1": "perspective relevance",
    "T2": "stance",
    "T3": "equivalence",
    "T4": "evidence",
    "T5": "overall",
}
