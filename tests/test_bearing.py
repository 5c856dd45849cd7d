"""The bearing stage (issue 71): the shipped trunk has a bearing head and a fitted decision; a
perspective that argues the claim as written is kept, one that only shares its topic is not; a
debate's relation to the claim carries a side, and a negated claim flips it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perspect.core.model import bundle
from perspect.core.model.decisions import BearingDecision
from perspect.core.result import Member
from perspect.core.types import Hit

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
needs_model = pytest.mark.skipif(
    not bundle.is_bundle(MODELS / "argument"), reason="no models/argument in this checkout"
)


@pytest.fixture(scope="module")
def trunk():
    from perspect.reranker.argument import ArgumentModel

    return ArgumentModel.load(MODELS / "argument", serving=True).trunk


@needs_model
def test_the_shipped_trunk_has_a_bearing_head_and_its_decision(trunk):
    assert trunk.heads.get("bearing") == 4
    d = BearingDecision.from_manifest(trunk.manifest)
    assert d is not None and 0 < d.bears.threshold <= 1.01 and d.consider >= 10
    assert d.bears.features == ("rel", "bear", "neither")
    assert d.side.features == ("side_bear", "support")
    man = trunk.manifest["decisions"]["bearing"]
    # fitted on tune claims, measured on report claims, beside the previous decision
    assert {"bearing", "previous"} <= set(man["report"]) and man["rows"]["report"] > 100


@needs_model
def test_what_argues_the_claim_bears_on_it_and_what_shares_its_topic_does_not(trunk):
    from perspect.pipeline.bearing import Bearing
    from perspect.pipeline.lower import LowerStates

    stage = Bearing(trunk, LowerStates(trunk), None, BearingDecision.from_manifest(trunk.manifest))
    claim = "Nuclear power is essential to fight climate change"
    texts = [
        "Nuclear plants produce almost no carbon dioxide while they run.",
        "Nuclear power stations leave waste that stays dangerous for thousands of years.",
        "Nuclear weapons have kept the peace between great powers.",
        "The train to Lyon leaves at nine in the morning.",
    ]
    hits = [Hit(str(i), t, 1.0, i + 1, "perspectives") for i, t in enumerate(texts)]
    rel = np.array([0.9, 0.9, 0.9, 0.9])  # the same relevance: the trunk alone decides
    idx, p, bearing = stage.judge(claim, trunk.claim_lower(claim), hits, rel)
    bears = dict(zip(idx, p, strict=True))
    # what argues the claim clears the cut; what is off the topic does not (nuclear weapons
    # under nuclear power, a neighbouring debate, is the judged set's hard case: the trunk still
    # reads it as bearing; bench/RESULTS.md, "What bears on the claim")
    cut = stage.decision.bears.threshold
    assert min(bears[0], bears[1]) >= cut > bears[3]
    assert np.allclose(bearing.sum(1), 1.0)  # for / against / no side / off topic


class _Stance:
    """P(support) of texts for a claim from the shipped trunk's stance head alone (the engine's
    StanceScorer stacks more; the debates stage reads whatever it is given)."""

    def __init__(self, trunk):
        self.trunk = trunk

    def __call__(self, claim, texts, ids=None, head=None):
        return self.trunk.support(claim, self.trunk.lower(list(texts)))


@needs_model
def test_a_debate_carries_its_side_and_a_negated_claim_flips_it(trunk):
    from perspect.pipeline.debates import DebateSides

    stage = DebateSides(_Stance(trunk))
    meta = {"debate": "Performing tests on animals must be banned", "debate_id": "d1"}
    members = [
        Member("a", "Human rights trump those of lower animals", 0.9, 0.7, {**meta, "side": "oppose"}),
        Member("b", "Animals feel pain just as we do", 0.9, 0.8, {**meta, "side": "support"}),
    ]  # fmt: skip
    claim = "Animal testing should be banned"
    r = stage.relations(claim, members)["d1"]
    assert r > 0.2  # the debate argues the same way as the claim
    out = {m.id: m.support for m in stage(claim, members)}
    assert out["a"] == 0.5 and out["b"] == 0.8  # the carried side and the own reading disagree on a
    neg = stage.relations("Animal testing should not be banned", members)["d1"]
    assert neg < r
