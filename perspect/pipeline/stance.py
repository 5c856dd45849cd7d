"""P(support) of kept candidates, and a cluster's side: the mean P(support) of its members
against the fitted side cut.

Its own stage because the side is a decision a reader acts on: a mean too close to the cut is
"unclear" (Decisions.stance_unclear) rather than a coin toss shown as a verdict; the strength is
P(of the side the mean leans to). P(support) comes from the stance trunk where the pair model
names one (issue 33: dev stance AUROC 77.3 -> 84+), with each perspective's lower-layer states
paid once (pipeline.lower); else from the pair model's stance head.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspect.core.datasets.negation import negate
from perspect.core.model.decisions import UNCLEAR, Decisions
from perspect.core.result import Member, SecondReading
from perspect.pipeline import valence
from perspect.pipeline.lower import LowerStates
from perspect.reranker import stance_trunk
from perspect.reranker.model import PairModel
from perspect.reranker.roles import pair_for
from perspect.reranker.stance_trunk import StanceTrunk


class StanceScorer:
    """The scorer of P(support) of (claim, perspective) pairs: the stance trunk's (through its
    fitted decision) where the pair model names one, else the pair model's stance head.
    Duck-types `PairModel.predict` for "stance", so evaluation and fitting read the same scores
    a search shows."""

    def __init__(self, model: PairModel, trunk: StanceTrunk | None, searcher=None):
        self.model, self.trunk, self.searcher = model, trunk, searcher
        # the one way this scorer, the clusters' relation pairs and the argument model (where it
        # shares the trunk's lower layers) read a text's lower states
        self.lower = LowerStates(trunk, searcher) if trunk is not None else None

    def __call__(
        self,
        claim: str,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        head: np.ndarray | None = None,
    ) -> np.ndarray:
        """`head`: the pair head's P(support) of the same pairs where the caller has it (a
        search does), else computed when the fitted stack reads it."""
        if not len(texts):
            return np.zeros(0)
        if self.trunk is None:
            return self.head(claim, texts)
        states = self.states(texts, ids)
        raw = self.trunk.support(claim, states)
        if head is None and stance_trunk.stacks_head(self.model.manifest):
            head = self.head(claim, texts)
        return self.with_valence(
            claim, texts, states, stance_trunk.calibrated(self.model.manifest, raw, head)
        )

    def from_trunk(
        self,
        claim: str,
        texts: Sequence[str],
        p: np.ndarray,
        states: Sequence[np.ndarray] | None = None,
    ) -> np.ndarray:
        """The fitted decision's P(support) where the caller already has the trunk's own `p` of
        (claim, text) (the mining stage reads every head in one pass) and, where it has them,
        the texts' lower `states` (else computed when the claim has a second reading): the same
        scale as a curated perspective's, the pair head computed where the stack reads it."""
        if not len(texts):
            return np.zeros(0)
        head = self.head(claim, texts) if stance_trunk.stacks_head(self.model.manifest) else None
        return self.with_valence(
            claim, texts, states, stance_trunk.calibrated(self.model.manifest, p, head)
        )

    def second_reading(self, claim: str) -> SecondReading | None:
        """The claim's second reading where this scorer mixes one in (a trunk, a fitted weight)."""
        if self.trunk is None or stance_trunk.valence_weight(self.model.manifest) <= 0:
            return None
        return valence.of(claim)

    def with_valence(
        self,
        claim: str,
        texts: Sequence[str],
        states: Sequence[np.ndarray] | None,
        p: np.ndarray,
    ) -> np.ndarray:
        """`p` averaged with the claim's second reading (pipeline.valence: "Zoos should be
        closed" read as "Zoos are good", the other way round) at the fitted weight; `p` where the
        claim has none or the bundle fitted no weight. Then, where the bundle fitted a weight for
        it, with the claim's negation read the other way round (`negated`)."""
        second = self.second_reading(claim)
        if second is not None:
            q = self._reading(second.text, texts, states)
            w = stance_trunk.valence_weight(self.model.manifest)
            p = (1 - w) * p + w * (q if second.sign > 0 else 1 - q)
        return self.negated(claim, texts, states, p)

    def negated(
        self,
        claim: str,
        texts: Sequence[str],
        states: Sequence[np.ndarray] | None,
        p: np.ndarray,
    ) -> np.ndarray:
        """`p` averaged with 1 - P(support) of the claim's negation by rule ("Animals should not
        have rights"), at the weight fitted on the tune claims (`stance_trunk.negation`): a text
        that supports the claim opposes its denial, and a model that reads topic more than
        direction gives both the same score, which the average cancels. `p` where none is
        fitted (the cost: one more top pass per kept perspective)."""
        w = stance_trunk.negation_weight(self.model.manifest) if self.trunk is not None else 0.0
        if w <= 0 or not len(texts):
            return p
        return (1 - w) * p + w * (1 - self._reading(negate(claim), texts, states))

    def _reading(
        self, text: str, texts: Sequence[str], states: Sequence[np.ndarray] | None
    ) -> np.ndarray:
        """The fitted decision's P(support) of `texts` for another reading `text` of the claim
        (its second reading, its negation): the trunk over their states, stacked with the pair
        head where the decision reads it."""
        states = self.states(texts) if states is None else states
        head = self.head(text, texts) if stance_trunk.stacks_head(self.model.manifest) else None
        return stance_trunk.calibrated(self.model.manifest, self.trunk.support(text, states), head)

    def head(self, claim: str, texts: Sequence[str]) -> np.ndarray:
        """The pair model's stance head: P(support) as its own calibration gives it."""
        return self.model.predict([pair_for("stance", claim, t) for t in texts], ["stance"])[
            "stance"
        ]

    def raw(self, claim: str, texts: Sequence[str], ids: Sequence[str] | None = None) -> np.ndarray:
        """The trunk's own P(support), before the fitted decision (over stored states where the
        index has them)."""
        assert self.trunk is not None
        return self.trunk.support(claim, self.states(texts, ids))

    def states(self, texts: Sequence[str], ids: Sequence[str] | None = None) -> list[np.ndarray]:
        """Each text's lower-layer states, paid once (pipeline.lower: the index's where it
        stores them, else those kept with it, else computed and kept)."""
        assert self.lower is not None
        return self.lower(texts, ids)

    def predict(self, pairs: Sequence[tuple[str, str]], tasks=("stance",)) -> dict[str, np.ndarray]:
        """{"stance": P(support)} of (claim, perspective) pairs, any number of claims."""
        out = np.zeros(len(pairs))
        by_claim: dict[str, list[int]] = {}
        for i, (c, _) in enumerate(pairs):
            by_claim.setdefault(c, []).append(i)
        for c, idx in by_claim.items():
            out[idx] = self(c, [pairs[i][1] for i in idx])
        return {"stance": out}


def side(members: Sequence[Member], decisions: Decisions) -> tuple[str, float]:
    """(stance, strength) of a group of members from their mean P(support): "support",
    "oppose" or "unclear", and P(of the side it leans to)."""
    return decisions.side(_mean(members))


def leaning(members: Sequence[Member], decisions: Decisions) -> str:
    return decisions.leaning(_mean(members))


def _mean(members: Sequence[Member]) -> float:
    return float(np.mean([m.support for m in members]))


__all__ = ["UNCLEAR", "leaning", "side"]
