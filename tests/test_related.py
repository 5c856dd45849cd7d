"""No empty answer when the pool holds something: the near misses, marked as low confidence."""

from __future__ import annotations

import json

from perspect import Perspect
from perspect.core.presentation.render import to_markdown
from perspect.pipeline.relevance import RELATED_MAX


def test_nothing_relevant_shows_the_best_candidates_apart(tiny_index, tiny_pair_model, tmp_path):
    from perspect.reranker.model import PairModel

    claim = "Animals feel pain and need legal protection"
    with Perspect.open("tiny", home=tiny_index, model=tiny_pair_model) as p:
        normal = p.search(claim)
    assert normal.clusters and not normal.related  # something passed: no near-miss list
    model = PairModel.load(tiny_pair_model)
    model.manifest["thresholds"]["relevance"] = 1.01  # nothing can pass
    model.manifest.get("stacks", {}).pop("relevance", None)
    model.save(tmp_path / "strict")
    with Perspect.open("tiny", home=tiny_index, model=tmp_path / "strict") as p:
        res = p.search(claim)
    assert not res.clusters
    assert 1 <= len(res.related) <= RELATED_MAX
    rel = [m.relevance for m in res.related]
    assert rel == sorted(rel, reverse=True)
    assert {m.id for m in res.related} <= {h.id for h in res.hits}
    doc = json.loads(json.dumps(res.to_json()))
    assert doc["clusters"] == [] and [m["id"] for m in doc["related"]] == [
        m.id for m in res.related
    ]
    assert "Related, low confidence" in to_markdown(res)
