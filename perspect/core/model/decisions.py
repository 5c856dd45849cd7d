"""The pipeline's fitted decisions, in one typed, versioned home.

Why: the stacks and thresholds used to live as a raw manifest dict that training wrote, the engine
read through dozens of look-ups with fallbacks for older models, and the evaluator partly
recomputed. Now only calibration (perspect.lab.fitting) makes a `Decisions`, only the pipeline and
the evaluator read one, and older manifests convert in exactly one place, `from_manifest`.

On disk it keeps the manifest's `thresholds` and `stacks` keys (what every saved model has), plus
`decisions_version`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from perspect.core.model.decision_stack import Stack

VERSION = 1
STACKED = ("relevance", "equivalence", "evidence")
UNCLEAR = "unclear"  # the side of a cluster the model cannot place (Decisions.stance_unclear)
# The accuracy the sides shown should reach on held-out train claims: the unclear margin is the
# smallest that keeps the sides it leaves shown at least this often right. 85 %: issue 41's sides
# target, a cut a reader acts on fitted for precision. At .75 the stance decision needed no margin
# (75.9 % right on tune already) and no cluster was ever unclear; at .85 (margin .17) dev's gold
# perspectives are 22.8 % unclear and the sides shown 85.7 % right (79.8 % before), and on 16 unseen
# claims judged by hand 4 of 10 wrong sides and 2 of 47 right ones become unclear
# (git history: bench/RESULTS.md before 2026-12-04).
UNCLEAR_TARGET = 0.85


@dataclass(frozen=True)
class Decisions:
    """Cuts and stacks, each fitted on the held-out train claims ("tune").

    - relevance: P(relevant) a perspective needs to be kept (the relevance stack's cut);
    - stance: T2's cut on P(support) (F1 of "support", as the paper scores it);
    - stance_side: the cut that puts a perspective or cluster on the support side (tuned for
      accuracy: T2's F1 drifts towards calling everything support);
    - equivalence: P(same point) cut of the stack; equivalence_head: of the trained head, the
      fallback for indexes without dense vectors;
    - cluster: the complete-link cut (None: the equivalence cut);
    - cluster_margin: two perspectives may merge unless their P(support) differ by more (None:
      models tuned before it merge only perspectives on the same side);
    - evidence, evidence_delta, evidence_k: `backed_links`' rule (cut, closeness to the best
      link, at most k);
    - evidence_verdict: a shown paragraph is labelled "supports" when its evidence score clears
      this (fitted for accuracy against gold backing paragraphs; None: the backing rule's
      choice, which on its own called nearly every top paragraph "supports");
    - stance_unclear: a cluster whose mean P(support) lies closer than this to `stance_side` is
      shown as "unclear" rather than on a side (None: every cluster gets a side). Fitted for a
      target accuracy of the sides shown (UNCLEAR_TARGET).
    """

    relevance: float = 0.5
    stance: float = 0.5
    stance_side: float = 0.5
    equivalence: float = 0.5
    equivalence_head: float = 0.5
    cluster: float | None = None
    cluster_margin: float | None = None
    evidence: float = 0.0
    evidence_delta: float = 0.0
    evidence_k: int = 1
    stance_unclear: float | None = None
    evidence_verdict: float | None = None
    stacks: Mapping[str, Stack] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "stacks", MappingProxyType(dict(self.stacks)))

    def stack(self, task: str) -> Stack | None:
        return self.stacks.get(task)

    @property
    def evidence_rule(self) -> tuple[float, float, int]:
        return (self.evidence, self.evidence_delta, self.evidence_k)

    def cluster_cut(self, with_vectors: bool) -> float:
        """The complete-link cut; without dense vectors the head's pairwise cut."""
        if not with_vectors:
            return self.equivalence_head
        return self.cluster if self.cluster is not None else self.equivalence

    def may_merge(self, support: np.ndarray) -> np.ndarray:
        """Which pairs of kept perspectives may merge (n x n): P(support) within the margin, or,
        for models tuned before the margin, the same side."""
        s = np.asarray(support, dtype=np.float64)
        if self.cluster_margin is not None:
            return np.abs(s[:, None] - s[None, :]) <= self.cluster_margin + 1e-9
        side = s >= self.stance_side
        return side[:, None] == side[None, :]

    def side(self, support: float) -> tuple[str, float]:
        """(stance, strength) for a mean P(support): "support" or "oppose" by `stance_side`, or
        "unclear" within `stance_unclear` of it; strength is P(of the side it leans to)."""
        lean = "support" if support >= self.stance_side else "oppose"
        strength = support if lean == "support" else 1.0 - support
        if (
            self.stance_unclear is not None
            and abs(support - self.stance_side) < self.stance_unclear
        ):
            return UNCLEAR, strength
        return lean, strength

    def leaning(self, support: float) -> str:
        """The side a mean P(support) leans to, unclear or not."""
        return "support" if support >= self.stance_side else "oppose"

    def with_margin(self, margin: float | None) -> Decisions:
        return replace(self, cluster_margin=margin)

    # -- on disk -----------------------------------------------------------------------------
    def to_manifest(self) -> dict[str, Any]:
        thr: dict[str, float | int] = {
            "relevance": self.relevance,
            "stance": self.stance,
            "stance_side": self.stance_side,
            "equivalence": self.equivalence,
            "evidence": self.evidence,
            "evidence_delta": self.evidence_delta,
            "evidence_k": self.evidence_k,
        }
        if self.cluster is not None:
            thr["cluster"] = self.cluster
        if self.cluster_margin is not None:
            thr["cluster_margin"] = self.cluster_margin
        if self.equivalence_head != self.equivalence:
            thr["equivalence_head"] = self.equivalence_head
        if self.stance_unclear is not None:
            thr["stance_unclear"] = self.stance_unclear
        if self.evidence_verdict is not None:
            thr["evidence_verdict"] = self.evidence_verdict
        return {
            "decisions_version": VERSION,
            "thresholds": thr,
            "stacks": {k: v.to_json() for k, v in self.stacks.items()},
        }

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> Decisions:
        """The one conversion of every saved form: a stack's own cut wins over the bare threshold
        (older models wrote both); keys an older model lacks take the behaviour it was tuned with."""
        version = manifest.get("decisions_version", 0)
        if version > VERSION:
            from perspect.core.errors import ModelError

            raise ModelError(
                f"the model's decisions are version {version}; this Perspect reads {VERSION}",
                hint="upgrade Perspect, or re-fit them: perspect train --task calibrate",
            )
        stacks = {k: Stack.from_json(v) for k, v in manifest.get("stacks", {}).items()}
        return cls.from_parts(manifest.get("thresholds", {}), stacks)

    @classmethod
    def from_parts(cls, thresholds: Mapping[str, float], stacks: Mapping[str, Stack]) -> Decisions:
        """From named cuts and fitted stacks, as calibration produces them."""
        thr = dict(thresholds)

        def cut(task: str, default: float) -> float:
            st = stacks.get(task)
            return float(st.threshold) if st is not None else float(thr.get(task, default))

        stance = float(thr.get("stance", 0.5))
        return cls(
            relevance=cut("relevance", 0.5),
            stance=stance,
            stance_side=float(thr.get("stance_side", stance)),
            equivalence=cut("equivalence", 0.5),
            equivalence_head=float(thr.get("equivalence_head", thr.get("equivalence", 0.5))),
            cluster=float(thr["cluster"]) if "cluster" in thr else None,
            cluster_margin=float(thr["cluster_margin"]) if "cluster_margin" in thr else None,
            # models tuned before the evidence stack had no cut: every link clears 0
            evidence=float(stacks["evidence"].threshold) if "evidence" in stacks else 0.0,
            evidence_delta=float(thr.get("evidence_delta", 0.0)),
            evidence_k=int(thr.get("evidence_k", 1)),
            stance_unclear=float(thr["stance_unclear"]) if "stance_unclear" in thr else None,
            evidence_verdict=(
                float(thr["evidence_verdict"]) if "evidence_verdict" in thr else None
            ),
            stacks=stacks,
        )


@dataclass(frozen=True)
class RelationCuts:
    """Cuts on the relation model's inference head (P(entail), P(contradict)) where a reader acts
    on it: a paragraph "supports" its perspective, a sentence is cited as its reason, a paragraph
    "contradicts" it. Fitted for precision on held-out inference pairs (the relation entry's
    manifest, `decisions.evidence`); below them a paragraph is only "related" and no sentence is
    cited."""

    entail_at: float
    contradict_at: float

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], use: str) -> RelationCuts | None:
        got = (manifest.get("decisions") or {}).get(use)
        if not got:
            return None
        return cls(float(got["entail_at"]), float(got["contradict_at"]))


@dataclass(frozen=True)
class MiningDecision:
    """Whether a sentence mined from the reader's documents or the news is an argument on the
    claim, and on which side (perspect.pipeline.mining), fitted on held-out train claims
    (perspect.lab.mining_fit; the pair entry's manifest, `decisions.mining`, beside the other
    decisions a search acts on):

    - `argument`: a stack over the relation model's heads on (claim, sentence), the sentence's
      dense cosine to the claim and its retrieval score, and cue words (reporting, dates,
      argument markers): P(the sentence makes a point on the claim); its threshold is the cut
      a sentence must clear to be shown, fitted for precision;
    - `min_similarity`: the dense cosine a candidate needs before any model reads it;
    - `side_margin`: a cluster of mined sentences alone is shown on a side only when its mean
      P(support) lies at least this far from the side cut (else "unclear", with its lean),
      fitted for precision on the tune claims' matched candidates; 0.5 where no margin reaches
      it, so that every such cluster is unclear.

    A mined sentence's P(support) is the stance decision curated perspectives are sided with
    (perspect.pipeline.stance.StanceScorer.from_trunk), read from the same pass. A
    stack fitted on the mined candidates' own matched sides sided 37 of 78 sentences of the
    hand-written sources' arguing articles as their articles do; the stance decision 52
    (bench/reader.py sources).
    """

    argument: Stack
    min_similarity: float = 0.3
    side_margin: float = 0.0

    @property
    def cut(self) -> float:
        return float(self.argument.threshold)

    def to_json(self) -> dict[str, Any]:
        return {
            "argument": self.argument.to_json(),
            "min_similarity": self.min_similarity,
            "side_margin": self.side_margin,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MiningDecision:
        return cls(
            Stack.from_json(d["argument"]),
            float(d.get("min_similarity", 0.3)),
            float(d.get("side_margin", 0.0)),
        )

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> MiningDecision | None:
        """The decision a pair model's manifest holds, or None (not fitted: no mining)."""
        got = (manifest.get("decisions") or {}).get("mining")
        return cls.from_json(got) if got else None


@dataclass(frozen=True)
class ArgumentCuts:
    """Where a reader acts on the argument model's (A, B) -> P(for), P(against), P(neither)
    (perspect.reranker.argument), each fitted for precision on held-out tune data by
    perspect.lab.argument_fit and kept in the argument entry's manifest (`decisions`):

    - `neither_at`: a perspective whose P(neither) for the claim reaches this takes no side: it
      leaves the sides (shown as related where nothing else is);
    - `for_at`: a paragraph "supports" its perspective when its cited sentence's P(for) reaches
      this, and only then is that sentence cited as the reason;
    - `against_at`: a paragraph "argues against" its perspective at this P(against), and is
      never shown as backing it;
    - `mine_at`: a sentence of the reader's documents is an argument on the claim when
      1 - P(neither) reaches this; `mine_side_at`: it is shown on a side when its share
      P(for) / (P(for) + P(against)) (or that of against) reaches this, else "unclear"."""

    neither_at: float
    for_at: float
    against_at: float
    mine_at: float
    mine_side_at: float

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> ArgumentCuts | None:
        got = (manifest.get("decisions") or {}).get("argument")
        if not got:
            return None
        return cls(*(float(got[k]) for k in
                     ("neither_at", "for_at", "against_at", "mine_at", "mine_side_at")))  # fmt: skip


@dataclass(frozen=True)
class BearingDecision:
    """Whether a candidate bears on the claim as written, and on which side (issue 71), fitted
    on the judged set's tune claims by perspect.lab.bearing_fit and kept in the argument entry's
    manifest (`decisions.bearing`):

    - `bears`: P(argues for or against the claim) from the relevance stack's probability and the
      argument trunk's bearing and neither heads; a candidate is kept at `bears.threshold`
      (fitted for precision; below it, a candidate on the claim's topic is at most "related");
    - `side`: P(for) of a kept candidate from the bearing head's for / against share and the
      stance decision's P(support); within `side_margin` of .5 it is too close to call;
    - `consider`: the candidates, most relevant first, the trunk reads for it."""

    bears: Stack
    side: Stack
    consider: int = 30
    side_margin: float = 0.0  # |P(for) - .5| under this: unclear (fitted for sides shown right)

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> BearingDecision | None:
        got = (manifest.get("decisions") or {}).get("bearing")
        if not got or "bears" not in got:
            return None
        return cls(Stack.from_json(got["bears"]), Stack.from_json(got["side"]),
                   int(got["consider"]), float(got.get("side_margin", 0.0)))  # fmt: skip
