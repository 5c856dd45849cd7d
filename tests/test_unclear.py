"""'Unclear' as a side: a cluster too close to the side cut is not shown as support or oppose."""

from __future__ import annotations

import json

import numpy as np

from perspect import Perspect
from perspect.core.model.decisions import UNCLEAR, Decisions
from perspect.core.presentation.render import print_result, to_markdown
from perspect.core.result import Member, PerspectiveCluster
from perspect.lab import reader_view as rv
from perspect.pipeline.order import ordered


def test_a_mean_near_the_side_cut_is_unclear():
    d = Decisions(stance_side=0.6, stance_unclear=0.1)
    assert d.side(0.75) == ("support", 0.75)
    assert d.side(0.4)[0] == "oppose"
    stance, strength = d.side(0.65)
    assert stance == UNCLEAR and strength == 0.65 and d.leaning(0.65) == "support"
    assert d.side(0.55)[0] == UNCLEAR and d.leaning(0.55) == "oppose"
    assert Decisions(stance_side=0.6).side(0.61)[0] == "support"  # no margin: always a side
    back = Decisions.from_manifest(json.loads(json.dumps(d.to_manifest())))
    assert back.stance_unclear == 0.1 and back.side(0.65)[0] == UNCLEAR


def test_the_margin_is_fitted_for_the_target_accuracy_of_what_is_shown():
    rng = np.random.default_rng(0)
    q = rng.uniform(0, 1, 4000)
    # confident sides right, sides near the cut a coin toss
    y = np.where(np.abs(q - 0.5) > 0.3, q >= 0.5, rng.uniform(size=q.size) < 0.5)
    rows = list(zip(y.tolist(), q.tolist(), strict=True))
    margin = rv.fit_unclear(rows, 0.5, 0.75)
    got = rv.side_coverage(rows, 0.5, margin)
    assert 0.05 < margin < 0.2  # about .1: (.7 - u) / (1 - 2u) reaches .75
    assert got["shown_accuracy"] >= 75 > got["accuracy"]
    assert 5 <= got["unclear_share"] <= 50
    kept = got["accuracy_when_kept"]
    assert list(kept) == ["100", "80", "60", "40", "20"] and kept["20"] == 100.0
    assert kept["100"] == got["accuracy"]
    # a model that is right everywhere needs no margin
    sure = [(bool(p >= 0.5), float(p)) for p in q]
    assert rv.fit_unclear(sure, 0.5, 0.75) == 0.0


def _c(stance: str, score: float) -> PerspectiveCluster:
    m = Member(f"{stance}{score}", "t", 0.9, 0.5)
    leans = "support" if stance == UNCLEAR else None
    return PerspectiveCluster(m, (m,), stance, 0.55, score, leans=leans)


def test_unclear_clusters_come_last_and_stay_out_of_the_balance():
    got, cov = ordered(
        [_c(UNCLEAR, 0.99), _c("support", 0.5), _c("oppose", 0.4), _c(UNCLEAR, 0.3)],
        0.25,
        {},
        ("bm25",),
    )
    assert [c.stance for c in got] == ["support", "oppose", UNCLEAR, UNCLEAR]
    assert (cov.support, cov.oppose, cov.unclear, cov.warning) == (1, 1, 2, None)
    only, cov = ordered([_c(UNCLEAR, 0.9)], 0.25, {}, ("bm25",))
    assert cov.warning and "unclear" in cov.warning
    doc = only[0].to_json()
    assert doc["stance"] == "unclear" and doc["leans"] == "support"
    assert doc["side_label"] == "unclear (leans support)"


def test_the_engine_shows_sides_it_cannot_tell_as_unclear(
    tiny_index, tiny_pair_model, tmp_path, capsys
):
    from perspect.reranker.model import PairModel

    claim = "Animals feel pain and need legal protection"
    with Perspect.open("tiny", home=tiny_index, model=tiny_pair_model) as p:
        before = p.search(claim)
    model = PairModel.load(tiny_pair_model)
    model.manifest["thresholds"]["stance_unclear"] = 0.6  # wider than any mean's distance
    model.save(tmp_path / "m")
    with Perspect.open("tiny", home=tiny_index, model=tmp_path / "m") as p:
        res = p.search(claim)
    assert res.clusters and all(c.stance == UNCLEAR for c in res.clusters)
    assert len(res.clusters) == len(before.clusters)
    assert (res.coverage.support, res.coverage.oppose) == (0, 0)
    assert res.coverage.unclear == len(res.clusters)
    assert {c.leans for c in res.clusters} <= {"support", "oppose"}
    doc = json.loads(json.dumps(res.to_json()))
    assert {c["stance"] for c in doc["clusters"]} == {"unclear"}
    assert doc["coverage"]["unclear"] == len(res.clusters)
    assert "## Unclear" in to_markdown(res)
    print_result(res)  # the CLI's text: under "Unclear", each with the side it leans to
    text = " ".join(capsys.readouterr().out.split())
    assert f"Unclear ({len(res.clusters)})" in text
    assert "(leans support)" in text or "(leans oppose)" in text
    assert "(unclear" not in text
