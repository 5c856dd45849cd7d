"""The full pipeline on a tiny index with a tiny model: structure, ordering, coverage, cancel."""

from __future__ import annotations

import json
import threading

import pytest

from perspect import Perspect
from perspect.core.result import Member, PerspectiveCluster, SearchResult
from perspect.pipeline.engine import Cancelled
from perspect.pipeline.order import coverage as _coverage
from perspect.pipeline.order import interleave as _interleave


def test_search_returns_clusters_with_evidence(tiny_index, tiny_pair_model):
    p = Perspect.open("tiny", home=tiny_index, model=tiny_pair_model)
    stages = []
    res = p.search(
        "Animals feel pain and need legal protection", progress=lambda s, f: stages.append(f)
    )
    assert isinstance(res, SearchResult) and res.clusters
    assert stages[-1] == 1.0 and stages == sorted(stages)
    # every retrieved candidate lands in exactly one cluster (threshold 0 keeps all)
    ids = [m.id for c in res.clusters for m in c.members]
    assert sorted(ids) == sorted(h.id for h in res.hits)
    for c in res.clusters:
        assert c.stance in ("support", "oppose")
        assert 0.5 <= c.strength <= 1.0
        assert c.representative == max(c.members, key=lambda m: m.relevance)
        assert all(m.support >= 0.5 for m in c.members) == (c.stance == "support")
    assert any(c.evidence for c in res.clusters)
    assert res.coverage.support + res.coverage.oppose == len(res.clusters)
    assert set(res.timings_ms) == {"retrieve", "relevance+stance", "equivalence", "evidence"}
    doc = json.loads(json.dumps(res.to_json()))
    assert doc["schema"] == "perspect.result/1" and len(doc["clusters"]) == len(res.clusters)


def test_cancel_stops_between_stages(tiny_index, tiny_pair_model):
    p = Perspect.open("tiny", home=tiny_index, model=tiny_pair_model)
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        p.search("uniforms", cancel=ev)


def _c(stance: str, score: float) -> PerspectiveCluster:
    m = Member(f"{stance}{score}", "t", 0.9, 0.9 if stance == "support" else 0.1)
    return PerspectiveCluster(m, (m,), stance, 0.9, score)


def test_interleave_alternates_sides_strongest_first():
    out = _interleave(
        [_c("support", 0.9), _c("support", 0.8), _c("support", 0.7), _c("oppose", 0.5)]
    )
    assert [(c.stance, c.score) for c in out] == [
        ("support", 0.9),
        ("oppose", 0.5),
        ("support", 0.8),
        ("support", 0.7),
    ]


def test_coverage_warnings():
    assert _coverage(3, 3, 0.25).warning is None
    assert "no opposing" in _coverage(4, 0, 0.25).warning
    assert "few supporting" in _coverage(1, 9, 0.25).warning
    assert "no perspective" in _coverage(0, 0, 0.25).warning


def test_complete_link_does_not_chain_and_respects_sides():
    import numpy as np

    from perspect.pipeline.clusters import complete_link

    p = np.array(
        [
            [0, 0.9, 0.0, 0.0],
            [0.9, 0, 0.8, 0.0],
            [0.0, 0.8, 0, 0.0],
            [0.0, 0.0, 0.0, 0],
        ]
    )
    lab = complete_link(p, np.array([True, True, True, True]), 0.5)
    # a chain a-b-c: single link would merge all three; complete link keeps c apart
    assert lab[0] == lab[1] and lab[2] != lab[0] and lab[3] not in (lab[0], lab[2])
    # the same strong pair on different sides never merges
    lab = complete_link(p, np.array([True, False, True, True]), 0.5)
    assert len(set(lab.tolist())) == 4
    # everything above the cut on one side: one cluster
    full = np.full((3, 3), 0.9)
    assert len(set(complete_link(full, np.ones(3, dtype=bool), 0.5).tolist())) == 1


def test_stance_margin_decides_which_perspectives_may_merge():
    import numpy as np

    from perspect.core.model.decisions import Decisions
    from perspect.lab import perspectrum_eval as pe

    support = np.array([0.9, 0.55, 0.2])
    # models tuned before the margin: same side only
    old = Decisions.from_manifest({"thresholds": {"stance": 0.5, "stance_side": 0.5}})
    assert old.may_merge(support).tolist() == [
        [True, True, False],
        [True, True, False],
        [False, False, True],
    ]
    m = old.with_margin(0.4).may_merge(support)
    assert m[0, 1] and m[1, 2] and not m[0, 2]  # .9 vs .2: confident contradiction
    # two phrasings of one point whose stance predictions disagree mildly (.9 vs .45): T3 over
    # clusters counts them merged only with a margin that allows it
    pred = pe.Predictions(
        t3=[
            (True, {"cosine": 0.9, "s_a": 0.9, "s_b": 0.45}),
            (False, {"cosine": 0.1, "s_a": 0.9, "s_b": 0.8}),
            (False, {"cosine": 0.1, "s_a": 0.45, "s_b": 0.8}),
        ],
        t3_claims=[(0, 3, [(0, 1), (0, 2), (1, 2)])],
    )
    assert pe.t3_clustered(pred, old, 0.5).recall == 0.0
    assert pe.t3_clustered(pred, old.with_margin(0.3), 0.5).recall == 0.0
    loose = pe.t3_clustered(pred, old.with_margin(0.5), 0.5)
    assert loose.recall == 1.0 and loose.precision == 1.0


def test_a_weakly_held_side_reads_as_leaning():
    from perspect.core.result import LEAN, Member, PerspectiveCluster

    m = Member("1", "zoos save species", 0.9, 0.4)
    sure = PerspectiveCluster(m, (m,), "oppose", LEAN + 0.1, 0.5)
    unsure = PerspectiveCluster(m, (m,), "oppose", LEAN - 0.1, 0.5)
    assert sure.side_label == "oppose" and unsure.side_label == "leans oppose"
    assert unsure.to_json()["side_label"] == "leans oppose"


def test_decisions_fitted_on_other_retrievers_are_flagged(tiny_index, tiny_pair_model, tmp_path):
    """The relevance stack reads the fused RRF score, which grows with the number of retrievers:
    an index with other retrievers than the decisions were fitted on says so in the result."""
    from perspect.api import Perspect
    from perspect.reranker.model import PairModel

    model = PairModel.load(tiny_pair_model)
    model.manifest["decisions_retrievers"] = ["bm25", "dense", "colbert"]
    model.save(tmp_path / "m")
    with Perspect.open("tiny", home=tiny_index, model=tmp_path / "m") as p:
        warning = p.search("Animals feel pain and need legal protection").coverage.warning
    assert warning and "bm25 + dense + colbert" in warning and "calibrate" in warning
    model.manifest["decisions_retrievers"] = ["bm25"]
    model.save(tmp_path / "same")
    with Perspect.open("tiny", home=tiny_index, model=tmp_path / "same") as p:
        warning = p.search("Animals feel pain and need legal protection").coverage.warning
    assert not warning or "fitted on" not in warning


def test_t3_as_the_default_engine_scores_reads_int8_past_the_fp32_budget():
    """`perspect eval`'s T3 at the default settings: the pairs a search would hand to the
    cross-encoder's int8 copy (past EngineConfig.equivalence_fp32_pairs) get the copy's score."""
    from perspect.core.model.decisions import Decisions
    from perspect.lab import perspectrum_eval as pe

    d = Decisions.from_manifest(
        {
            "thresholds": {"stance": 0.5, "stance_side": 0.5, "equivalence": 0.5, "cluster": 0.5},
            "stacks": {
                "equivalence": {
                    "features": ["cosine", "ce"],
                    "coef": [1.0, 8.0],
                    "intercept": -4.5,
                    "threshold": 0.5,
                }
            },
        }
    )
    # three phrasings of one point: fp32 says same (.9), the int8 copy says no (.1)
    rows = [(True, {"cosine": 0.5, "ce": 0.9, "s_a": 0.9, "s_b": 0.9}) for _ in range(3)]
    pred = pe.Predictions(t3=rows, t3_claims=[(0, 3, [(0, 1), (0, 2), (1, 2)])])
    every = pe.t3_budgeted(pred, d, None)
    assert every["T3_clusters"].recall == 1.0 and every["T3"].recall == 1.0
    pred.t3_cheap = [0.1, 0.1, 0.1]
    assert pe.t3_budgeted(pred, d, None, fp32=None)["T3_clusters"].recall == 1.0
    assert pe.t3_budgeted(pred, d, None, fp32=3)["T3_clusters"].recall == 1.0
    tiered = pe.t3_budgeted(pred, d, None, fp32=0)  # every pair through the int8 copy
    assert tiered["T3_clusters"].recall == 0.0 and tiered["T3"].recall == 0.0
    one = pe.t3_budgeted(pred, d, None, fp32=1)  # one pair merges; its partner cannot join
    assert 0.0 < one["T3_clusters"].recall < 1.0


def test_t1_on_a_mixed_index_counts_other_sources_as_not_gold():
    """`perspect eval perspectrum --index default` on `make demo`'s index, whose perspectives mix
    PERSPECTRUM's numeric ids with the debates' `debatepedia:...`: T1 scores it (the others are
    never gold) instead of failing on `int()`."""
    from perspect.lab import perspectrum_eval as pe

    ids = ["debatepedia:debatepedia-causal-00837_1_4", "12", "touche23:x", "7"]
    got = [pe.pid_of(i) for i in ids]
    assert got[1::2] == [12, 7] and got[0] < 0 and got[2] < 0 and got[0] != got[2]
    prf = pe.ir_t1([([[12], [7, 8]], got, None)], k=4)  # both gold clusters found, 2 of 4 hits
    assert prf.recall == 1.0 and prf.precision == 0.5
