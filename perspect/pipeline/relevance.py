"""The second stage: which candidates bear on the claim, and P(support) of each, from one pass.

Relevance and stance share the pair model's forward pass; relevance is then stacked with the
bi-encoder cosine, the fused rank and the fused RRF score when the decisions have that stack.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perspect.core.model.decision_stack import logit
from perspect.core.model.decisions import Decisions
from perspect.core.result import Member
from perspect.core.types import Hit, Query
from perspect.reranker.model import PairModel
from perspect.reranker.roles import pair_for
from perspect.retriever.base import VectorBackend


@dataclass(frozen=True)
class Judged:
    relevance: np.ndarray  # P(relevant), stacked where the decisions say so
    stance: np.ndarray  # P(support)
    head: np.ndarray  # the relevance head alone


def relevance_features(
    hits: Sequence[Hit], query: Query, head: np.ndarray, vectors: VectorBackend | None, rrf_k: int
) -> dict[str, np.ndarray]:
    """The relevance stack's inputs: the head's logit, the bi-encoder cosine, the fused rank
    and the fused RRF score (times k): how many retrievers ranked the candidate, and how high.
    Adding `rrf` to the first three: tune-claim T1 52.9 -> 54.6, dev 54.3 -> 56.1."""
    cos = np.zeros(len(hits))
    if query.vector is not None and vectors is not None:
        cos = vectors.vectors([h.id for h in hits]) @ query.vector
    return {
        "head": logit(head),
        "cosine": cos,
        "log_rank": np.log(np.arange(1, len(hits) + 1)),
        "rrf": np.array([h.score for h in hits], dtype=np.float64) * rrf_k,
    }


def judge(
    model: PairModel,
    decisions: Decisions,
    query: Query,
    hits: Sequence[Hit],
    vectors: VectorBackend | None,
    rrf_k: int,
) -> Judged:
    if not hits:
        z = np.zeros(0)
        return Judged(z, z, z)
    out = model.predict(
        [pair_for("relevance", query.text, h.text) for h in hits], ["relevance", "stance"]
    )
    rel = out["relevance"]
    st = decisions.stack("relevance")
    if st is not None:
        rel = st.prob(relevance_features(hits, query, out["relevance"], vectors, rrf_k))
    return Judged(rel, out["stance"], out["relevance"])


RELATED_MAX = 3  # candidates shown as "related, low confidence" when none passes the cut


def near_misses(hits: Sequence[Hit], judged: Judged, most: int = RELATED_MAX) -> list[Member]:
    """The most relevant candidates whatever the cut: what a search shows, marked as low
    confidence, when none passes it (an empty screen says less than the best near misses)."""
    return kept(hits, judged, float("-inf"))[:most]


def kept(hits: Sequence[Hit], judged: Judged, cut: float) -> list[Member]:
    """The candidates that clear the relevance cut, most relevant first."""
    rel, sup = judged.relevance, judged.stance
    order = [i for i in np.argsort(-rel, kind="stable") if rel[i] >= cut]
    return [
        Member(hits[i].id, hits[i].text, float(rel[i]), float(sup[i]), hits[i].metadata)
        for i in order
    ]
