"""Evidence verdicts that mean something: fitted for accuracy against gold backing paragraphs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from perspect.core.index.links import Link
from perspect.core.model.decisions import Decisions
from perspect.lab import reader_view as rv


def _rows(rng, n=300):
    """Clusters whose three links score by cosine; gold paragraphs score higher, some overlap."""
    rows = []
    for c in range(n):
        gold_cos = rng.uniform(0.45, 0.9)
        links = [Link(f"{c}-g", 0.0, gold_cos)] + [
            Link(f"{c}-{j}", 0.0, rng.uniform(0.2, 0.6)) for j in range(2)
        ]
        rows.append(([f"{c}-g"], links))
    return rows


def test_a_fitted_verdict_beats_the_backing_rule_and_the_majority_class():
    rng = np.random.default_rng(1)
    tune, dev = _rows(rng), _rows(rng)
    # the shipped rule's shape: cut 0, close to the best, top three: nearly all "supports"
    rule = Decisions(evidence=0.0, evidence_delta=1.0, evidence_k=3)
    before = rv.verdict_accuracy(dev, rule)
    assert before["said_supports"] > 80 and before["accuracy"] < before["majority_class"]
    cut = rv.fit_verdict(tune, None)
    after = rv.verdict_accuracy(dev, replace(rule, evidence_verdict=cut))
    assert 0.45 < cut < 0.65
    assert after["accuracy"] > after["majority_class"] > before["accuracy"]
    assert after["backing_rule_accuracy"] == before["accuracy"]


def test_the_cut_round_trips_and_older_decisions_keep_the_rule():
    d = Decisions.from_manifest(Decisions(evidence_verdict=0.42).to_manifest())
    assert d.evidence_verdict == 0.42
    assert Decisions.from_manifest({"thresholds": {}}).evidence_verdict is None


def test_a_judged_paragraph_that_argues_against_is_never_shown_as_only_related():
    """Issue 61: a linked paragraph whose cited sentence argues against its perspective more than
    for it is shown as "contradicts" past the fitted cut, else not at all; one leaning for it, or
    unjudged, stays "related"."""
    from perspect.core.index.links import Link
    from perspect.pipeline.evidence import leans_against

    against = Link("e1", 0.5, 0.5, entail=0.10, contradict=0.55)
    leaning_for = Link("e2", 0.5, 0.5, entail=0.40, contradict=0.30)
    unjudged = Link("e3", 0.5, 0.5)
    assert leans_against(against, "related")
    assert not leans_against(against, "contradicts")  # shown, as arguing against
    assert not leans_against(leaning_for, "related")
    assert not leans_against(unjudged, "related")
