"""Which candidates bear on the claim as written, and on which side (issue 71).

Why a stage of its own: the relevance stack learnt "written for this claim" from curated
debates, but every claim a reader types is new, so everything shown was written for a
neighbouring debate. The argument trunk's bearing head was fitted on Perspect's own candidates
judged by people (for / against / no side / off the topic, docs/judged-set.md); its decision
(`BearingDecision`) stacks it with the relevance stack and the neither head, and the side with
the stance decision. One top pass of the trunk a candidate gives every head (the memo of
`StanceTrunk.every_head`), so the later stages that read the same pairs pay nothing again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perspect.core.model.decision_stack import logit
from perspect.core.model.decisions import BearingDecision
from perspect.core.result import Member
from perspect.core.types import Hit

HEAD = "bearing"
FOR, AGAINST = 0, 1
NEITHER = 2  # the argument head's third column


class Bearing:
    """The bearing decision over one index's stored lower states (the argument model's)."""

    def __init__(self, trunk, lower, stance, decision: BearingDecision, side_cut: float = 0.5):
        """`trunk`: the argument trunk (with a bearing and an argument head); `lower`: how a
        search reads lower states (pipeline.lower); `stance`: the StanceScorer; `side_cut`: the
        stance decision's (Decisions.stance_side): a side too close to call is set to it, so
        its cluster shows as unclear."""
        self.trunk, self.lower, self.stance, self.decision = trunk, lower, stance, decision
        self.side_cut = side_cut

    @classmethod
    def of(cls, arguing, stance, side_cut: float = 0.5) -> Bearing | None:
        """The stage where the argument model has a bearing head and a fitted decision."""
        if arguing is None:
            return None
        trunk = arguing.model.trunk
        decision = BearingDecision.from_manifest(trunk.manifest)
        if HEAD not in trunk.heads or decision is None:
            return None
        return cls(trunk, arguing.lower, stance, decision, side_cut)

    def heads(self, claim_states: np.ndarray, ids: Sequence[str], texts: Sequence[str]):
        """(bearing (n, 4), argument (n, 3)) of (claim, text) pairs from one top pass each."""
        if not len(texts):
            return np.zeros((0, 4)), np.zeros((0, 3))
        states = self.lower(texts, ids)
        got = self.trunk.every_head([claim_states] * len(states), states)
        return got[HEAD], got["argument"]

    def features(self, relevance: np.ndarray, bearing: np.ndarray, argument: np.ndarray):
        """The `bears` stack's inputs."""
        return {
            "rel": logit(relevance),
            "bear": logit(bearing[:, FOR] + bearing[:, AGAINST]),
            "neither": logit(argument[:, NEITHER]),
        }

    def side_features(self, bearing: np.ndarray, support: np.ndarray):
        share = bearing[:, FOR] / np.maximum(bearing[:, FOR] + bearing[:, AGAINST], 1e-9)
        return {"side_bear": logit(share), "support": logit(support)}

    def considered(self, relevance: np.ndarray) -> list[int]:
        return [int(i) for i in np.argsort(-relevance, kind="stable")[: self.decision.consider]]

    def judge(self, claim: str, claim_states, hits: Sequence[Hit], relevance: np.ndarray):
        """(indices considered, P(bears), bearing head probabilities) of the candidates."""
        idx = self.considered(relevance)
        bearing, argument = self.heads(
            claim_states, [hits[i].id for i in idx], [hits[i].text for i in idx]
        )
        p = self.decision.bears.prob(self.features(relevance[idx], bearing, argument))
        return idx, p, bearing

    def kept(self, claim: str, claim_states, hits: Sequence[Hit], relevance: np.ndarray,
             head_support: np.ndarray) -> tuple[list[Member], np.ndarray]:  # fmt: skip
        """The members that bear on the claim, most likely first, each with P(bears) as its
        relevance and the side decision's P(for) as its support; and P(bears) of every
        candidate (0 where not considered), for the near misses."""
        idx, p, bearing = self.judge(claim, claim_states, hits, relevance)
        every = np.zeros(len(hits))
        every[idx] = p
        keep = [n for n in np.argsort(-p, kind="stable") if p[n] >= self.decision.bears.threshold]
        if not keep:
            return [], every
        chosen = [idx[n] for n in keep]
        support = self.stance(
            claim,
            [hits[i].text for i in chosen],
            [hits[i].id for i in chosen],
            head_support[chosen],
        )
        side = self.decision.side.prob(self.side_features(bearing[keep], support))
        side[np.abs(side - 0.5) < self.decision.side_margin] = self.side_cut
        members = [
            Member(hits[i].id, hits[i].text, float(p[n]), float(s), hits[i].metadata)
            for i, n, s in zip(chosen, keep, side, strict=True)
        ]
        return members, every
