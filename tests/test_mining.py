"""Perspectives mined from the reader's documents, end to end with the shipped bundle on an index
the tests write: the relation model's states stored for every document sentence; a claim the
curated pool never saw answered on both sides from the documents, each mined phrasing with its
article, reporting sentences left out, the coverage line saying where a side comes from; a mined
sentence that makes a curated perspective's point joining its cluster; an index without
documents answering as before; the CLI and JSON showing the sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perspect import api
from perspect.api import Perspect, Source
from perspect.core.model import bundle
from perspect.core.model.decisions import MiningDecision
from tests.conftest import run_cli, write_json, write_jsonl
from tests.test_shipped_bundle import EVIDENCE, POOL

MODELS = Path(__file__).resolve().parent.parent / "models"


def _fitted() -> bool:
    if not bundle.is_bundle(MODELS / "pair"):
        return False
    man = json.loads((MODELS / "pair" / "manifest.json").read_text())
    return MiningDecision.from_manifest(man) is not None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (bundle.is_bundle(MODELS / "pair") and _fitted()),
        reason="the shipped bundle (models/pair with a mining decision)",
    ),
]

CLAIM = "Zoos should be closed"
# two articles for closing zoos, two against, one that only reports; each sentence labelled
ARTICLES = [
    (
        "ledger",
        "The Ledger",
        "It is time to close the zoos",
        [
            (
                "pro",
                "Zoos should be closed because they keep wild animals in enclosures a fraction "
                "of the size of their natural ranges.",
            ),
            (
                "pro",
                "This confinement causes chronic stress, and many captive animals pace, sway or "
                "harm themselves.",
            ),
            ("report", "The city zoo was founded in 1912 and houses around 900 animals."),
        ],
    ),
    (
        "post",
        "Morning Post",
        "Captivity is cruel",
        [
            (
                "pro",
                "Keeping intelligent animals like elephants and orcas in captivity is cruel and "
                "should end.",
            ),
            ("report", "The study was published in a journal on Monday."),
        ],
    ),
    (
        "herald",
        "The Herald",
        "Zoos save species",
        [
            ("con", "Zoos save endangered species from extinction through breeding programmes."),
            (
                "con",
                "Closing zoos would end the breeding programmes that protect hundreds of "
                "endangered species.",
            ),
        ],
    ),
    (
        "times",
        "Daily Times",
        "Zoos fund conservation",
        [
            (
                "con",
                "Zoos raise millions every year for conservation projects that protect wild "
                "animals.",
            ),
            ("report", "The association has 240 members in North America."),
        ],
    ),
    (
        "metro",
        "Metro News",
        "City zoo welcomes baby giraffe",
        [
            ("report", "A baby giraffe was born at the city zoo on Tuesday morning."),
            ("report", "Keepers said mother and calf were doing well."),
            ("report", "Visitors will be able to see the giraffes from next week."),
        ],
    ),
]
LABEL = {text: lab for *_, sents in ARTICLES for lab, text in sents}


def _articles():
    return [
        {"id": aid, "outlet": outlet, "title": title, "date": "2025-03-04",
         "url": f"https://{aid}.example/zoos", "text": " ".join(t for _, t in sents)}
        for aid, outlet, title, sents in ARTICLES
    ]  # fmt: skip


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def home(tmp_path_factory, monkeypatch_module):
    """The small pool of tests/test_shipped_bundle.py with the bundle's retrievers, as `mine`
    with the articles above as documents and as `plain` without."""
    for var in ("PERSPECT_MODEL", "PERSPECT_MODELS", "PERSPECT_DENSE_MODEL"):
        monkeypatch_module.delenv(var, raising=False)
    monkeypatch_module.setenv("PERSPECT_MODELS", str(MODELS))
    monkeypatch_module.setenv("PERSPECT_COLBERT_MODEL", str(MODELS / "colbert"))
    d = tmp_path_factory.mktemp("mining")
    pf = write_json(d / "p.json", [{"id": i, "text": t} for i, t, _ in POOL])
    ef = write_json(d / "e.json", [{"id": i, "text": t} for i, t in EVIDENCE])
    # the documents' states stored at build time (`--stance-states`): what the first test reads
    config = api.index_config(["bm25", "dense", "colbert"], stance_states=True)
    for name in ("plain", "mine"):
        api.build_index(name, [Source("perspectives", pf), Source("evidence", ef)],
                        home=d, config=config)  # fmt: skip
    api.add_to_index("mine", [Source("documents", write_jsonl(d / "a.jsonl", _articles()))], home=d)
    return d


@pytest.fixture(scope="module")
def mine(home):
    with Perspect.open("mine", home=home, model=MODELS / "pair") as p:
        yield p


def test_every_document_sentence_has_the_mining_models_states(mine):
    """Stored under the key of the model mining reads them with (the relation model's, or the
    sides' one trunk where the bundle has no relation model of its own for an index without news),
    so a search reads them instead of computing them."""
    states = mine._searcher.stance_states("documents")
    n = sum(len(sents) for *_, sents in ARTICLES)
    assert states is not None and states.count() == n == mine.pools["documents"]
    assert states.key == mine.engine().mining.trunk.states_key
    assert mine.manifest["stance_states_documents"]["count"] == n


def test_a_claim_the_pool_never_saw_gets_arguments_from_the_documents(mine):
    """Arguments, with their sources, no reporting sentence, and never a side the sentence
    argues against: a mined cluster's side is right or "unclear" (the shipped side margin is
    fitted for 80 % right sides, which the relation model does not reach: every mined cluster
    is unclear, bench/RESULTS.md)."""
    res = mine.search(CLAIM)
    mined = [(c, m) for c in res.clusters for m in c.members if m.mined]
    assert mined, "nothing was mined"
    assert "mining" in res.timings_ms
    for c, m in mined:
        assert m.source.pool == "documents" and m.source.outlet and m.source.title
        assert m.source.url == f"https://{m.source.article_id}.example/zoos"
        assert m.id == f"{m.source.article_id}#{m.source.position}"
        assert c.sources and m.source.outlet in c.sources
    labels = [LABEL[m.text] for _, m in mined]
    assert labels.count("report") <= len(labels) // 10, [m.text for _, m in mined]
    wrong = [(c.stance, m.text) for c, m in mined if c.stance != "unclear"
             and {"pro": "support", "con": "oppose"}.get(LABEL[m.text]) != c.stance]  # fmt: skip
    assert not wrong, wrong
    assert all(c.leans in ("support", "oppose") for c, _ in mined if c.stance == "unclear")
    js = res.to_json()
    got = [m for c in js["clusters"] for m in c["members"] if m["source"]]
    assert got and {"outlet", "title", "date", "url", "position", "article_id"} <= set(
        got[0]["source"]
    )
    assert all(c["sources"] == len({m["source"]["outlet"] for m in c["members"] if m["source"]})
               for c in js["clusters"])  # fmt: skip


# reached with the argument model (issue 55): its side cut, fitted on a UKP topic it never saw,
# places mined sentences on both sides (it was a strict xfail with the relation model's sides)
def test_both_sides_of_a_claim_the_pool_never_saw_are_placed_from_the_documents(mine):
    res = mine.search(CLAIM)
    placed = {c.stance for c in res.clusters for m in c.members if m.mined
              and {"pro": "support", "con": "oppose"}.get(LABEL[m.text]) == c.stance}  # fmt: skip
    assert placed == {"support", "oppose"}


def test_the_coverage_line_says_when_a_side_comes_only_from_mined_sentences(mine):
    res = mine.search(CLAIM)
    for stance, name in (("support", "supporting"), ("oppose", "opposing")):
        side = [c for c in res.clusters if c.stance == stance]
        said = [t for t in res.coverage.thin if f"the {name} side" in t]
        if side and all(c.mined_only for c in side):
            assert said and "only from mined sentences" in said[0]
            outlets = {s for c in side for s in c.sources}
            if len(outlets) == 1:
                assert f"one source ({outlets.pop()})" in said[0]
        else:
            assert not said
    assert res.to_json()["coverage"]["thin"] == list(res.coverage.thin)


def test_a_mined_sentence_that_makes_a_curated_point_joins_its_cluster(home, mine):
    """A document sentence repeating a curated perspective's point (the pain one) is a member of
    that perspective's cluster, not a cluster of its own."""
    text = "Animals should have legal rights because they feel pain and suffer just as people do."
    api.add_to_index("mine", [Source("documents", write_jsonl(home / "b.jsonl", [
        {"id": "gazette", "outlet": "The Gazette", "title": "Pain", "text": text}]))],
        home=home)  # fmt: skip
    res = mine.search("animals should have lawful rights")
    joined = [c for c in res.clusters if any(m.text == text for m in c.members)]
    assert joined, [[m.text for m in c.members] for c in res.clusters]
    assert any(not m.mined for m in joined[0].members), "it formed a cluster of its own"
    assert joined[0].sources == ("The Gazette",) and not joined[0].mined_only


def test_an_index_without_documents_answers_as_before(home, mine):
    with Perspect.open("plain", home=home, model=MODELS / "pair") as plain:
        assert not plain.engine().mining.active
        res = plain.search("animals should have lawful rights")
    assert "mining" not in res.timings_ms
    assert not any(m.mined for c in res.clusters for m in c.members) and not res.coverage.thin


def test_the_cli_shows_each_mined_perspective_with_its_source(home, mine):
    model = ("--model", str(MODELS / "pair"))  # the tests' default is no model (conftest)
    out = run_cli("search", CLAIM, "--index", "mine", "--home", str(home), *model,
                  timeout=600).stdout  # fmt: skip
    assert "↳" in out and "mined sentence" in out
    assert any(outlet in out for _, outlet, *_ in ARTICLES)
    args = ("search", CLAIM, "--index", "mine", "--home", str(home), "--json", *model)
    js = json.loads(run_cli(*args, timeout=600).stdout)
    assert any(m["source"] for c in js["clusters"] for m in c["members"])
