"""The argument model as served: (A, B) -> P(B argues for A), P(against A), P(neither), one
question asked at three levels (issue 55): A = the claim and B = a perspective (does it take a
side at all), A = a perspective and B = a sentence of its evidence (the verdict, the cited
reason), A = the claim and B = a sentence of the reader's documents (mining).

The same decomposed all-mpnet-base-v2 as the stance trunk (perspect.reranker.stance_trunk: frozen
lower 9 layers per text, LoRA on the top 3) with `argument` (3-way) and `stance` heads, trained by
perspect.lab.train.argument. Its lower layers and text length are the relation model's, so the
lower states an index stores for perspectives serve both, and a claim's are computed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from perspect.core.model.decisions import ArgumentCuts
from perspect.reranker.stance_trunk import StanceTrunk

FOR, AGAINST, NEITHER = 0, 1, 2
HEAD = "argument"


class ArgumentModel:
    """A loaded argument entry: `judge` over lower states, `judge_texts` over texts; `cuts` the
    fitted decisions a reader acts on (None: not fitted, no consumer reads it)."""

    def __init__(self, trunk: StanceTrunk):
        if HEAD not in trunk.heads:
            raise ValueError(f"{trunk.origin} has no {HEAD!r} head")
        self.trunk = trunk
        self.cuts = ArgumentCuts.from_manifest(trunk.manifest)

    @classmethod
    def load(cls, folder: str | Path, serving: bool = True, int8: bool = False) -> ArgumentModel:
        return cls(StanceTrunk.load(folder, serving=serving, int8=int8))

    @property
    def manifest(self) -> dict:
        return self.trunk.manifest

    @property
    def states_key(self) -> str:
        return self.trunk.states_key

    def lower(self, texts: Sequence[str]) -> list[np.ndarray]:
        return self.trunk.lower(texts)

    def claim_lower(self, text: str) -> np.ndarray:
        return self.trunk.claim_lower(text)

    def judge(self, a: Sequence[np.ndarray], b: Sequence[np.ndarray]) -> np.ndarray:
        """(n, 3): P(for), P(against), P(neither) of each pair (a[i], b[i]) of lower states."""
        if not len(a):
            return np.zeros((0, 3))
        return np.asarray(self.trunk.pairs(HEAD, a, b), dtype=np.float64)

    def judge_texts(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """`judge` of text pairs (their lower layers run here; each distinct text once)."""
        uniq = list(dict.fromkeys([*a, *b]))
        states = dict(zip(uniq, self.lower(uniq), strict=True))
        return self.judge([states[t] for t in a], [states[t] for t in b])


def side_share(p: np.ndarray) -> np.ndarray:
    """P(for) / (P(for) + P(against)): which side a text takes, where it takes one."""
    p = np.atleast_2d(p)
    return p[:, FOR] / np.maximum(p[:, FOR] + p[:, AGAINST], 1e-9)
