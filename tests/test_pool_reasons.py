"""Reasons from the reader's documents (perspect.pipeline.pool_reasons): a cluster whose evidence
cites nothing gets a document sentence that argues for it, with its source; never one that argues
against it; bounded per search, and what is judged once is kept for the next search."""

from __future__ import annotations

from pathlib import Path

import pytest

from perspect import api
from perspect.api import Perspect, Source
from perspect.core.model import bundle
from perspect.core.presentation.render import to_markdown
from perspect.pipeline import pool_reasons
from perspect.pipeline.engine import EngineConfig
from tests.conftest import write_json, write_jsonl
from tests.test_shipped_bundle import CLAIM, POOL

MODELS = Path(__file__).resolve().parent.parent / "models"
pytestmark = pytest.mark.skipif(
    not (bundle.is_bundle(MODELS / "argument") and bundle.is_bundle(MODELS / "pair")),
    reason="no models/argument or models/pair in this checkout",
)

# (The wording before the direction-trained model, "Only a being that can understand and accept
# moral duties can claim rights in return, and no animal can make or keep a promise.", it reads
# at P(for) .59 for "Animals cannot take on duties, so they cannot hold rights": under its cut.)
FOR_DUTIES = (
    "Since animals cannot understand or carry out any obligation, it makes no sense to give "
    "them rights."
)
AGAINST_DUTIES = (
    "Babies bear no duties at all, yet nobody doubts that they hold rights, so the same must "
    "hold for animals."
)
NEUTRAL = "The committee met on a Tuesday in the town hall."
UNMINED = EngineConfig(mine_most=0)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    d = tmp_path_factory.mktemp("pool_reasons")
    pf = write_json(d / "p.json", [{"id": i, "text": t} for i, t, _ in POOL])
    docs = [
        {"id": "ethics", "outlet": "Ethics Weekly", "title": "Duties and rights",
         "text": f"{FOR_DUTIES} {NEUTRAL}"},
        {"id": "letters", "outlet": "Letters", "title": "On infants",
         "text": AGAINST_DUTIES},
    ]  # fmt: skip
    api.build_index(
        "docs",
        [Source("perspectives", pf), Source("documents", write_jsonl(d / "d.jsonl", docs))],
        home=d,
        config=api.index_config(["bm25", "dense"]),
    )
    return d


def test_a_cluster_without_evidence_cites_a_document_sentence_that_argues_for_it(home):
    """Mining off (it would show the sentence as an argument of its own): the duties cluster,
    with no evidence pool at all, cites the document sentence that argues its point."""
    from perspect.reranker.argument import ArgumentModel

    with Perspect.open("docs", home=home, model=MODELS / "pair", config=UNMINED) as p:
        res = p.search(CLAIM)
    cited = [c for c in res.clusters if c.why is not None and c.why.source is not None]
    assert cited, [(c.representative.text, c.why) for c in res.clusters]
    assert "pool reasons" in res.timings_ms
    model = ArgumentModel.load(MODELS / "argument", serving=True)
    for c in cited:  # it argues for one of the cluster's phrasings, against none
        p = model.judge_texts([m.text for m in c.members], [c.why.sentence] * len(c.members))
        assert p[:, 0].max() >= model.cuts.for_at and p[:, 1].max() < model.cuts.against_at
    for c in cited:
        assert c.why.source.pool == "documents" and c.why.sentence != NEUTRAL
        assert c.why.sentence != AGAINST_DUTIES
    duties = [c for c in cited if c.why.sentence == FOR_DUTIES]
    assert duties and duties[0].representative.id in {"5", "6"}
    md = to_markdown(res)
    assert "document: Ethics Weekly · Duties and rights" in md
    assert cited[0].to_json()["why"]["source"]["outlet"] == cited[0].why.source.outlet
    from perspect.tui.widgets.cluster_item import ClusterItem

    shown = ClusterItem(duties[0])._text().plain  # the TUI's column names the source too
    assert FOR_DUTIES in shown and "(document: Ethics Weekly · Duties and rights)" in shown


def test_new_judgments_are_bounded_per_search_and_kept_for_the_next(home, monkeypatch):
    """With no budget for new judgments a search cites nothing from the documents; once a search
    with a budget has judged the pairs (kept with the index), the same search without a budget
    cites the same reasons."""
    (home / "docs" / "argument_judgments.sqlite").unlink(missing_ok=True)
    monkeypatch.setattr(pool_reasons, "BUDGET", 0)
    with Perspect.open("docs", home=home, model=MODELS / "pair", config=UNMINED) as p:
        none = p.search(CLAIM)
    assert not [c for c in none.clusters if c.why is not None and c.why.source is not None]
    monkeypatch.setattr(pool_reasons, "BUDGET", 12)
    with Perspect.open("docs", home=home, model=MODELS / "pair", config=UNMINED) as p:
        judged = p.search(CLAIM)
    monkeypatch.setattr(pool_reasons, "BUDGET", 0)
    with Perspect.open("docs", home=home, model=MODELS / "pair", config=UNMINED) as p:
        kept = p.search(CLAIM)

    def reasons(r):
        return {c.representative.id: c.why.sentence for c in r.clusters if c.why is not None}

    assert reasons(judged) and reasons(kept) == reasons(judged)


def test_a_sentence_the_answer_shows_as_a_mined_argument_is_not_also_a_reason(home):
    with Perspect.open("docs", home=home, model=MODELS / "pair") as p:
        res = p.search(CLAIM)
    mined = {m.id for c in res.clusters for m in c.members if m.mined}
    assert mined  # the duties sentence is an argument on the claim: mined
    assert not [c for c in res.clusters if c.why is not None and c.why.evidence in mined]
