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
    # only merely related paragraphs: no reason rather than a sentence that shares words
    assert why.cite([_cluster("Zoos keep endangered species alive.", [other])], None, None) == [
        None
    ]


def test_with_vectors_the_closest_sentence_wins():
    c = _cluster("Zoos keep endangered species alive.", [EvidenceItem("e1", PARA, 0.9, "supports")])
    axis = {"Zoos are popular.": [1, 0], "Tickets are expensive.": [1, 0]}

    def embed(texts):
        return np.array([axis.get(t, [0, 1]) for t in texts], dtype=np.float32)

    (got,) = why.cite([c], lambda ids: np.array([[0, 1]], dtype=np.float32), embed)
    assert got.sentence.startswith("Many species")


def test_a_sentence_that_only_restates_its_perspective_is_no_reason():
    """The closest sentence to a perspective is often the perspective itself, quoted by its
    paragraph: it says what, not why, and the cluster cites nothing instead."""
    from perspect.core.result import Why

    para = "Space exploration is a waste of money. Probes cost billions and return little."
    c = _cluster(
        "space exploration is a waste of money", [EvidenceItem("e", para, 0.9, "supports")]
    )
    quoted = Why("e", para[:38], (0, 38))
    reason = Why("e", para[39:], (39, len(para)))
    assert why.without_restatements([c, c, c], [quoted, reason, None]) == [None, reason, None]
    # against any phrasing of the cluster, a copy with its typos mended included
    typo = Member("q", "organs woud be ony accesible for those who have money", 0.8, 0.8)
    two = PerspectiveCluster(c.representative, (c.representative, typo), "support", 0.9, 0.8, ())
    mended = Why("e", "ORGANS WOULD BE ONLY ACCESIBLE FOR THOSE WHO HAVE MONEY.", (0, 1))
    assert why.without_restatements([two], [mended]) == [None]


def test_search_results_carry_their_reason(tiny_index, tiny_pair_model):
    with Perspect.open("tiny", home=tiny_index, model=tiny_pair_model) as p:
        res = p.search("Animals feel pain and need legal protection")
    # a reason only from a paragraph judged to support the perspective, never a fallback
    with_evidence = [c for c in res.clusters if c.evidence]
    cited = [c for c in with_evidence if any(e.verdict == "supports" for e in c.evidence)]
    assert cited and all(c.why is not None for c in cited)
    assert all(c.why is None for c in with_evidence if c not in cited)
    for c in cited:
        item = next(e for e in c.evidence if e.id == c.why.evidence)
        s, e = c.why.span
        assert item.text[s:e] == c.why.sentence
    doc = json.loads(json.dumps(res.to_json()))
    w = next(x["why"] for x in doc["clusters"] if x["evidence"])
    assert set(w) == {"evidence", "sentence", "span", "source"} and len(w["span"]) == 2
    assert w["source"] is None  # from its evidence, not a document or the news


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


def test_stored_sentences_cite_what_the_search_would_encode(
    tiny_perspectrum, tiny_pair_model, tmp_path
):
    """Links keep their paragraph's closest sentence at index time; a search cites from them
    with nothing encoded, and picks what encoding at query time picks."""
    from perspect.core.datasets.perspectrum import load_claims
    from perspect.indexer.links import MIN_CHARS
    from perspect.lab.pools import pool_searcher
    from perspect.pipeline.engine import Engine
    from perspect.reranker.model import PairModel

    searcher = pool_searcher(tiny_perspectrum, tmp_path / "idx", retrievers=("bm25", "dense"))
    engine = Engine.load(searcher, PairModel.load(tiny_pair_model))
    pids = [
        str(p) for c in load_claims(tiny_perspectrum, "train") for cl in c.clusters for p in cl.pids
    ]
    stored = searcher.links().get(pids)
    texts = searcher.store("evidence").get_many(
        sorted({x.evidence_id for links in stored.values() for x in links})
    )
    n = 0
    for links in stored.values():
        for x in links:
            assert x.why is not None
            s, e = x.why
            assert e - s >= MIN_CHARS or (s, e) == (0, 0)
            n += e > s
            assert (
                s == e or texts[x.evidence_id].text[s:e].strip() == texts[x.evidence_id].text[s:e]
            )
    assert n > 0
    calls = []
    ev = searcher.vector_backend("evidence")
    real = ev.embed_queries
    ev.embed_queries = lambda t: calls.append(len(t)) or real(t)
    compared = 0
    for claim in load_claims(tiny_perspectrum, "train")[:4]:
        res = engine.search(claim.text)
        assert calls == []  # every cited sentence came from the links
        for c in res.clusters:
            if not c.evidence or not stored.get(c.representative.id):
                continue
            (fresh,) = why.cite(
                [c], searcher.vector_backend("perspectives").vectors, real
            )  # what the search would have encoded
            assert c.why == fresh
            compared += 1
    assert compared > 0
    searcher.close()


def test_links_written_before_the_sentences_were_stored_still_work(tmp_path):
    import sqlite3

    from perspect.core.index.links import Link, Links

    db = sqlite3.connect(tmp_path / "links.sqlite")
    db.execute(
        "CREATE TABLE links (pid TEXT, rank INTEGER, eid TEXT, score REAL, cosine REAL,"
        " PRIMARY KEY (pid, rank))"
    )
    db.execute("INSERT INTO links VALUES ('p1', 0, 'e1', 0.03, 0.5)")
    db.commit()
    db.close()
    old = Links(tmp_path)  # read-only, as a search opens it
    assert old.get(["p1"])["p1"] == [Link("e1", 0.03, 0.5)]
    old.close()
    writer = Links(tmp_path, readonly=False)  # an add to the old index: the columns appear
    writer.replace([("p2", [Link("e2", 0.02, 0.4, why=(3, 30), why_cosine=0.7)])])
    got = writer.get(["p1", "p2"])
    assert got["p1"][0].why is None and got["p2"][0].why == (3, 30)
    assert got["p2"][0].why_cosine == 0.7
    writer.close()
