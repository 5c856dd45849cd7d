"""A cited reason per cluster: one evidence sentence, located by its span in the paragraph."""

from __future__ import annotations

import json

import numpy as np

from perspect import Perspect
from perspect.core.result import EvidenceItem, Member, PerspectiveCluster
from perspect.pipeline import why

PARA = (
    "Zoos are popular. Many species would be extinct without captive breeding programmes in "
    "zoos. Tickets are expensive."
)


def test_sentence_spans_point_into_the_text():
    spans = why.sentence_spans(PARA)
    assert len(spans) == 3
    assert [PARA[s:e] for s, e in spans][1].startswith("Many species")
    assert why.sentence_spans("") == []


def _cluster(text: str, evidence) -> PerspectiveCluster:
    m = Member("p", text, 0.9, 0.9)
    return PerspectiveCluster(m, (m,), "support", 0.9, 0.8, tuple(evidence))


def test_the_best_sentence_of_a_backing_paragraph_is_cited():
    backing = EvidenceItem("e1", PARA, 0.9, "supports")
    other = EvidenceItem(
        "e2", "Zoos keep endangered species alive, a keeper said at length.", 0.2, "related"
    )
    c = _cluster("Zoos keep endangered species alive.", [backing, other])
    (got,) = why.cite([c], None, None)  # no vectors: word overlap
    assert got.evidence == "e1"  # a backing paragraph before a merely related one
    assert PARA[got.span[0] : got.span[1]] == got.sentence
    assert got.sentence.startswith("Many species")
    assert why.cite([_cluster("x", [])], None, None) == [None]


def test_with_vectors_the_closest_sentence_wins():
    c = _cluster("Zoos keep endangered species alive.", [EvidenceItem("e1", PARA, 0.9, "supports")])
    axis = {"Zoos are popular.": [1, 0], "Tickets are expensive.": [1, 0]}

    def embed(texts):
        return np.array([axis.get(t, [0, 1]) for t in texts], dtype=np.float32)

    (got,) = why.cite([c], lambda ids: np.array([[0, 1]], dtype=np.float32), embed)
    assert got.sentence.startswith("Many species")


def test_search_results_carry_their_reason(tiny_index, tiny_pair_model):
    with Perspect.open("tiny", home=tiny_index, model=tiny_pair_model) as p:
        res = p.search("Animals feel pain and need legal protection")
    cited = [c for c in res.clusters if c.evidence]
    assert cited and all(c.why is not None for c in cited)
    for c in cited:
        item = next(e for e in c.evidence if e.id == c.why.evidence)
        s, e = c.why.span
        assert item.text[s:e] == c.why.sentence
    doc = json.loads(json.dumps(res.to_json()))
    w = next(x["why"] for x in doc["clusters"] if x["evidence"])
    assert set(w) == {"evidence", "sentence", "span"} and len(w["span"]) == 2


def test_citation_rates_beside_the_top_paragraph_baseline():
    from perspect.lab.reader_view import citation_rates

    cites = [([1, 2], "2", "3"), ([4], "4", "4"), ([5], "6", "5"), ([7], None, None)]
    got = citation_rates(cites)
    assert got == {
        "clusters": 3,
        "cited_in_gold": round(100 * 2 / 3, 2),
        "first_sentence_of_top_paragraph": round(100 * 2 / 3, 2),
    }
    assert citation_rates([]) is None
