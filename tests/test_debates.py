"""Arguments with their debates (issue 72): the pool keeps each curated argument's debate, side,
source and licence; PERSPECTRUM keeps its ids and labels its train claims only; two arguments on
opposite sides of one debate never merge; a cluster names its debate in the JSON and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from perspect.core.result import Debate, Member, PerspectiveCluster
from perspect.pipeline.debates import debate_sides_agree
from tests.conftest import PERSPECTRUM

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
needs_shared = pytest.mark.skipif(
    not (SHARED / "argument").is_dir()
    or not (PERSPECTRUM / "perspective_pool_v1.0.json").is_file(),
    reason=f"no argument corpora at {SHARED} or no PERSPECTRUM at {PERSPECTRUM}",
)


@needs_shared
def test_the_pool_keeps_every_argument_with_its_debate_and_side(tmp_path):
    from perspect.core.datasets import debates

    path, summary = debates.build(SHARED, PERSPECTRUM, tmp_path)
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert summary["items"] == len(rows) > 20_000
    assert set(summary["by_source"]) == set(debates.LICENCES)
    pool = json.loads((PERSPECTRUM / "perspective_pool_v1.0.json").read_text())
    ids = {r["id"] for r in rows}
    assert {str(p["pId"]) for p in pool} <= ids  # evaluations and links still resolve
    split = json.loads((PERSPECTRUM / "dataset_split_v1.0.json").read_text())
    claims = json.loads((PERSPECTRUM / "perspectrum_with_answers_v1.0.json").read_text())
    dev_pids = {str(p) for c in claims if split[str(c["cId"])] == "dev"
                for cl in c["perspectives"] for p in cl["pids"]}  # fmt: skip
    train_pids = {str(p) for c in claims if split[str(c["cId"])] == "train"
                  for cl in c["perspectives"] for p in cl["pids"]}  # fmt: skip
    by_id = {r["id"]: r for r in rows}
    assert all("side" not in by_id[p] for p in dev_pids - train_pids)  # dev reports T2: unlabelled
    assert all(by_id[p]["side"] in ("support", "oppose") for p in train_pids if p in by_id)
    for r in rows:
        assert r["licence"] and r["source"] in debates.LICENCES
        if "side" in r:
            assert r["debate"] and r["side"] in ("support", "oppose") and r["debate_id"]
    touche = [r for r in rows if r["source"] == "touche23"]
    assert touche and all(r["id"].startswith("touche23:") for r in touche)


def _member(i: str, debate: str | None, side: str | None, support: float = 0.7) -> Member:
    meta = {"debate_id": debate, "side": side, "debate": "Animal testing should be banned"}
    return Member(i, f"text {i}", 0.9, support, {k: v for k, v in meta.items() if v})


def test_opposite_sides_of_one_debate_never_merge():
    members = [_member("a", "d1", "support"), _member("b", "d1", "oppose"),
               _member("c", "d1", "support"), _member("d", None, None)]  # fmt: skip
    ok = debate_sides_agree(members)
    assert not ok[0, 1] and not ok[1, 0] and not ok[1, 2]
    assert ok[0, 2] and ok[0, 3] and ok[1, 3] and np.all(np.diag(ok))


def test_a_cluster_names_the_debate_it_was_written_for():
    m = _member("a", "d1", "oppose")
    c = PerspectiveCluster(m, (m,), "support", 0.8, 1.0)
    assert c.debate == Debate("Animal testing should be banned", "oppose", "")
    assert c.to_json()["debate"]["label"] == "written against 'Animal testing should be banned'"
    bare = _member("b", None, None)
    assert PerspectiveCluster(bare, (bare,), "support", 0.8, 1.0).to_json()["debate"] is None
