"""The news relation a search shows (issue 73): does a news sentence strengthen or weaken a claim
(or a perspective), read by the argument trunk's heads under a stack fitted on the judged news
pairs (perspect.lab.news_fit, docs/judged-set.md).

Why a stack over the heads and not the ClaimDiff head alone: ClaimDiff was taught on pairs of
articles about one event, where "strengthens" means "confirms a detail"; a reader's
"strengthens" is "argues for", which the bearing head (claim, text: for / against / no side / off
topic) learnt from the judges and the stance and argument heads from the debates. All of them
come from the one top pass a pair costs (`every_head`, claim first), so the stack costs a search
nothing the ClaimDiff head alone would not. Same interface as the comparator (`compare` over
(sentence, claim) pairs): the news stage asks one question of whichever judge the bundle ships.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perspect.reranker.comparator import Relation
from perspect.reranker.relation_judge import KeptLower

# the columns a stack may read: (head, column) of the claim -> sentence pass
COLUMNS = {
    "bear_for": ("bearing", 0),
    "bear_against": ("bearing", 1),
    "bear_noside": ("bearing", 2),
    "bear_off": ("bearing", 3),
    "stance": ("stance", None),
    "arg_for": ("argument", 0),
    "arg_against": ("argument", 1),
    "arg_neither": ("argument", 2),
    "nli_entail": ("nli", 0),
    "nli_neutral": ("nli", 1),
    "nli_contradict": ("nli", 2),
    "equivalence": ("equivalence", None),
    "cd_neither": ("claimdiff", 0),
    "cd_strengthen": ("claimdiff", 1),
    "cd_weaken": ("claimdiff", 2),
}


def logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-5, 1 - 1e-5)
    return np.log(p / (1 - p))


def columns(heads: dict[str, np.ndarray], names: Sequence[str]) -> np.ndarray:
    """The stack's inputs from `every_head`'s output: each named column, as a logit."""
    cols = []
    for name in names:
        head, j = COLUMNS[name]
        v = heads[head]
        cols.append(v.reshape(-1) if j is None else v[:, j])
    return logit(np.stack(cols, 1))


class NewsJudge(KeptLower):
    """strengthen / weaken / neither of (sentence, claim) pairs: a multinomial stack over the
    trunk's heads; a sentence is shown where P(strengthen) + P(weaken) (it bears on the claim)
    clears `shown_at`, fitted for precision on held-out claims, as the likelier of the two. Why
    the sum and not the larger one: on the judged pairs the most confident single relations were
    mostly wrong about the direction, while the sum ranks what bears on the claim best (bench
    figures in perspect.lab.news_fit's report)."""

    reads_negation = False  # the stack was fitted as it is, without the negation rule

    def __init__(self, trunk, decision: dict[str, Any]):
        super().__init__(trunk)
        self.features = tuple(decision["features"])
        self.weights = np.asarray(decision["weights"], dtype=np.float64)  # (3, features)
        self.bias = np.asarray(decision["bias"], dtype=np.float64)
        self.shown_at = float(decision["shown_at"])

    @classmethod
    def of(cls, trunk, manifest: dict | None) -> NewsJudge | None:
        """The judge of a trunk with a bearing head and the news stack fitted over it, which the
        pair model's manifest keeps with the pipeline's other decisions (`manifest`), else None."""
        if trunk is None or "bearing" not in trunk.heads:
            return None
        decision = ((manifest or {}).get("decisions") or {}).get("news_stack")
        return cls(trunk, decision) if decision else None

    def for_inference(self) -> NewsJudge:
        return self

    def probabilities(self, pairs: Sequence[tuple[str, str]], batch: int = 64) -> np.ndarray:
        """(n, 3): P(neither, strengthen, weaken) of each (sentence, claim) pair."""
        if not pairs:
            return np.zeros((0, 3))
        claims = self.lower([c for _, c in pairs])
        sents = self.lower([s for s, _ in pairs])
        x = columns(self.trunk.every_head(claims, sents, batch), self.features)
        z = x @ self.weights.T + self.bias
        z = np.exp(z - z.max(1, keepdims=True))
        return z / z.sum(1, keepdims=True)

    def compare(
        self, pairs: Sequence[tuple[str, str]], setting: str = "doc", batch_size: int = 64
    ) -> list[Relation]:
        """The relation of each (sentence, claim) pair: the likelier of strengthen and weaken
        where it clears the cut, else neither. `setting` is the comparator's; one cut serves."""
        out = []
        for pn, ps, pw in self.probabilities(pairs, batch_size):
            top = "strengthen" if ps >= pw else "weaken"
            rel = top if ps + pw >= self.shown_at else "neither"
            out.append(Relation(float(ps), float(pw), float(pn), rel, ()))
        return out
