"""Stacks, thresholds and the T1-T4 pipeline on a tiny hand-made PERSPECTRUM-format folder.

Runs the real packaged bi-encoder (dense vectors, cosine equivalence, evidence links) with the tiny
test cross-encoder, so the whole calibrate -> evaluate path runs in seconds.
"""

from __future__ import annotations

import json
import shutil

import numpy as np

from perspect.core.datasets.perspectrum import load_claims, load_perspectives, tune_claims_of
from perspect.core.index.links import Link
from perspect.core.model.decision_stack import Stack, fit
from perspect.core.model.decisions import Decisions
from perspect.lab import perspectrum_eval as pe
from perspect.lab import reader_view as rv
from perspect.lab.fitting import recalibrate
from perspect.lab.pools import pool_searcher
from perspect.pipeline.engine import Engine
from perspect.reranker.model import PairModel


def test_stack_fit_orders_and_round_trips():
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(0.8, 0.1, 50), rng.normal(0.3, 0.1, 50)]
    y = np.r_[np.ones(50), np.zeros(50)]
    st = fit(("cosine",), x[:, None], y).with_threshold(0.5)
    assert st.coef[0] > 0
    p = st.prob({"cosine": np.array([0.2, 0.55, 0.9])})
    assert p[0] < 0.1 < 0.9 < p[2] and p[0] < p[1] < p[2]
    assert Stack.from_json(json.loads(json.dumps(st.to_json()))) == st


def _links(*pairs):
    """Links from (id, cosine) pairs, fused scores by rank."""
    return [Link(str(e), 1 / (61 + r), cos) for r, (e, cos) in enumerate(pairs)]


def test_t4_returns_the_best_link_over_the_cut():
    rows = [
        ([1], _links((1, 0.8), (2, 0.7))),
        ([3], _links((4, 0.6), (3, 0.5))),
        ([5], _links((5, 0.2))),
    ]
    m = pe._t4(rows, 0.0)  # returns 1, 4, 5: two right, every gold once
    assert round(m.precision, 3) == round(2 / 3, 3) and round(m.recall, 3) == round(2 / 3, 3)
    m = pe._t4(rows, 0.3)  # the third perspective returns nothing: precision of an empty set 0
    assert round(m.recall, 3) == round(1 / 3, 3)
    d = pe.tune(pe.Predictions(t4=rows))
    assert pe._t4(rows, d.evidence, 0, 1, d.stack("evidence")).f1 >= m.f1


def test_evidence_backs_links_close_to_the_top_one():
    from perspect.pipeline.evidence import backed_links

    assert backed_links([0.7, 0.66, 0.5], 0.4, 0.05, 3) == [0, 1]
    assert backed_links([0.7, 0.66, 0.5], 0.4, 0.0, 3) == [0]
    assert backed_links([0.7, 0.69, 0.69], 0.4, 0.05, 2) == [0, 1]
    assert backed_links([0.3, 0.29], 0.4, 0.05, 2) == [] and backed_links([], 0, 0, 1) == []
    # two gold paragraphs each: the second close link doubles recall, so tuning takes it
    rows = [
        ([1, 2], _links((1, 0.8), (2, 0.78), (9, 0.5))),
        ([3, 4], _links((3, 0.6), (4, 0.59))),
    ]
    assert pe._t4(rows, 0.0).recall == 0.5 and pe._t4(rows, 0.0, 0.05, 2).recall == 1.0
    d = pe.tune(pe.Predictions(t4=rows))
    assert d.evidence_k >= 2
    assert pe._t4(rows, d.evidence, d.evidence_delta, 2, d.stack("evidence")).f1 == 1.0


def test_evidence_stack_learns_that_links_both_retrievers_found_back_more():
    from perspect.pipeline.evidence import link_scores

    # the gold paragraph was found by BM25 and dense (fused 2/61), a distractor by dense only
    # (1/61) with a slightly higher cosine: the cosine ranks the distractor first
    rows = [
        (
            [10 * i],
            [
                Link(str(10 * i + 1), 1 / 61, 0.71 + 0.01 * i),
                Link(str(10 * i), 2 / 62, 0.70 + 0.01 * i),
            ],
        )
        for i in range(8)
    ]
    d = pe.tune(pe.Predictions(t4=rows))
    st = d.stack("evidence")
    assert st.features == ("rrf", "cos", "rmargin") and st.coef[0] > 0
    assert pe._t4(rows, 0.0).f1 == 0.0  # cosine alone backs the distractor
    assert pe._t4(rows, *d.evidence_rule, st).f1 == 1.0
    p = link_scores(rows[0][1], st)
    assert p[1] > p[0]
    assert list(link_scores(rows[0][1], None)) == [0.71, 0.70]  # old models: the cosine


def test_recalibrate_fits_stacks_and_eval_runs_the_engine(
    tiny_perspectrum, tiny_pair_model, tmp_path
):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_pair_model, model_dir)
    assert len(tune_claims_of(tiny_perspectrum)[0]) == 1
    m = recalibrate(model_dir, tiny_perspectrum, retrievers=("bm25", "dense")).manifest
    assert set(m["stacks"]) == {"relevance", "equivalence", "evidence"}
    assert m["stacks"]["relevance"]["features"] == ["head", "cosine", "log_rank", "rrf"]
    assert m["stacks"]["equivalence"]["features"] == ["cosine", "agree", "resid", "jacc"]
    assert m["tune_metrics"]["T3"]["f1"] > 50

    model = PairModel.load(model_dir)
    searcher = pool_searcher(tiny_perspectrum, tmp_path / "idx", retrievers=("bm25", "dense"))
    engine = Engine.load(searcher, model)
    dev = load_claims(tiny_perspectrum, "dev")
    pred = pe.predict(engine, dev, load_perspectives(tiny_perspectrum))
    decisions = Decisions.from_manifest(model.manifest)
    scores = pe.score(pred, decisions)
    assert set(scores) == {"T1", "T2", "T3", "T4", "T3_clusters"}
    # on the unseen claim, paraphrases of one perspective score above different perspectives
    probs = pe.equivalence_probs(pred.t3, decisions.stacks)
    same = np.array([g for g, _ in pred.t3])
    assert probs[same].mean() > probs[~same].mean() + 0.1
    assert 0.0 < m["thresholds"]["cluster"] < 0.6
    # each dev perspective's own paragraph is its best link (unresolvable eId 999 is ignored)
    assert all(g == [int(c[0].evidence_id)] for g, c in pred.t4) and scores["T4"].recall == 1.0
    assert m["stacks"]["evidence"]["features"] == ["rrf", "cos", "rmargin"]
    # the search keeps exactly what T1 scored: one pipeline, evaluated and served
    _gold, cands, feats = pred.t1[0]
    kept = {
        c
        for c, p in zip(cands, pe.relevance_probs(feats, decisions.stacks), strict=True)
        if p >= decisions.relevance
    }
    res = engine.search(dev[0].text)
    assert {int(m.id) for c in res.clusters for m in c.members} == kept


def test_stance_detail_exposes_the_all_support_baseline():
    # half supports; a model that ranks perfectly but sits below the threshold on one support
    t2 = [(True, 0.9), (True, 0.8), (True, 0.4), (False, 0.3), (False, 0.2), (False, 0.1)]
    d = rv.stance_detail(t2, 0.5)
    assert d["support_share"] == 50.0 and d["auroc"] == 100.0
    assert d["all_support_f1"] == round(100 * 2 * 0.5 / 1.5, 2)
    assert d["accuracy"] == round(100 * 5 / 6, 2)
    assert d["macro_f1"] == round(100 * (0.8 + 6 / 7) / 2, 2)


def test_continue_training_keeps_other_heads_and_their_decisions(
    tiny_perspectrum, tiny_pair_model, tmp_path
):
    import dataclasses

    import torch

    from perspect.lab.fitting import train
    from perspect.lab.train.pair import PROFILES

    prof = dataclasses.replace(PROFILES["quick"], caps={"stance": 48}, epochs={"stance": 3})
    before = PairModel.load(tiny_pair_model)
    out = tmp_path / "continued"
    model = train(
        tiny_perspectrum,
        out,
        tasks=("stance",),
        profile=prof,
        log=lambda m: None,
        init=tiny_pair_model,
    )
    m = json.loads((out / "manifest.json").read_text())
    assert m["tasks"] == ["relevance", "stance", "equivalence", "evidence"]
    assert m["continued_from"]["path"] == str(tiny_pair_model)
    # 3 fitted claims x 4 perspectives = 12 stance pairs: one batch of 16, three passes
    assert m["training"]["batches_planned"] == 3
    heads_before, heads_after = before.net.heads, model.net.heads
    assert torch.equal(heads_before["equivalence"].weight, heads_after["equivalence"].weight)
    assert not torch.equal(heads_before["stance"].weight, heads_after["stance"].weight)
    # decisions for every head are re-fitted on the tune claims, not only the trained one's
    assert {"T1", "T2", "T3", "T4"} <= set(m["tune_metrics"])
    assert {"relevance", "evidence"} <= set(m["stacks"])


def test_equivalence_features_condition_on_the_claim():
    from perspect.pipeline.clusters import equivalence_features

    claim = np.array([1.0, 0.0, 0.0])
    # a and b share only the claim's direction; a and c also share a point of their own
    v = np.array([[0.8, 0.6, 0.0], [0.8, 0.0, 0.6], [0.8, 0.55, 0.24]])
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    pairs = (np.array([0, 0]), np.array([1, 2]))
    stems = [{"pain", "suffer"}, {"economy"}, {"pain", "legal"}]
    f = equivalence_features(v, [0.9, 0.2, 0.8], pairs, claim, stems)
    assert f["cosine"][0] > 0.6  # the plain cosine sees the shared topic
    assert abs(f["resid"][0]) < 1e-6 and f["resid"][1] > 0.9  # the residual sees the point
    assert np.allclose(f["jacc"], [0.0, 1 / 3])
    assert np.allclose(f["agree"], [0.9 * 0.2 + 0.1 * 0.8, 0.9 * 0.8 + 0.1 * 0.2])
    assert set(equivalence_features(v, None, pairs)) == {"cosine"}  # older stacks: same input
