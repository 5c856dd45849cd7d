"""The cited reason of a shown paragraph is the sentence that argues for its perspective, not only
the one closest to it (perspect.pipeline.arguing, `Arguing._other_sentences`), with the shipped
argument model: a paragraph whose stored sentence argues the other way cites its sentence that
argues for the perspective; new judgments are bounded per search; a group that already has a
reason is not read further."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from perspect.core.index.links import Link
from perspect.core.model import bundle
from perspect.pipeline import arguing as arguing_mod

MODELS = Path(__file__).resolve().parent.parent / "models"
pytestmark = pytest.mark.skipif(
    not bundle.is_bundle(MODELS / "argument"), reason="no models/argument in this checkout"
)

PERSPECTIVE = "Animals cannot take on duties, so they cannot hold rights."
AGAINST = (
    "Babies bear no duties at all, yet nobody doubts that they hold rights, so the same must "
    "hold for animals."
)
FOR = (
    "Since animals cannot understand or carry out any obligation, it makes no sense to give "
    "them rights."
)
PARAGRAPH = f"{AGAINST} {FOR}"


@dataclass(frozen=True)
class Paragraph:
    text: str


@pytest.fixture(scope="module")
def model():
    from perspect.reranker.argument import ArgumentModel

    return ArgumentModel.load(MODELS / "argument")


def _judge(model, links=None):
    a = arguing_mod.Arguing(model, None)
    stored = (0, len(AGAINST))  # the sentence the index stored: the closest, the other way
    links = links or [Link("e1", 0.1, 0.8, why=stored)]
    out = a.judge_links(["p1"], {"p1": PERSPECTIVE}, [links], {"e1": Paragraph(PARAGRAPH)})
    return a, out[0][0]


def test_a_paragraph_cites_its_sentence_that_argues_for_the_perspective(model):
    a, link = _judge(model)
    assert PARAGRAPH[link.why[0] : link.why[1]] == FOR
    assert link.entail >= a.cuts.for_at and link.contradict < a.cuts.against_at


def test_other_sentences_are_bounded_per_search(model, monkeypatch):
    monkeypatch.setattr(arguing_mod, "OTHER_SENTENCES", 0)
    a, link = _judge(model)
    assert link.why == (0, len(AGAINST))  # not read further: its stored sentence is judged alone
    assert link.entail < a.cuts.for_at


def test_a_group_with_a_reason_is_not_read_further(model):
    """Where the stored sentence already argues for the perspective, nothing else is judged."""
    start = PARAGRAPH.index(FOR)
    a, link = _judge(model, [Link("e1", 0.1, 0.8, why=(start, len(PARAGRAPH)))])
    assert link.why == (start, len(PARAGRAPH))
    assert len(a._pairs) == 1
