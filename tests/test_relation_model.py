"""The relation questions on the bundle's one trunk (models/argument, issue 62): its inference,
equivalence and ClaimDiff heads, fitted over the argument model's pooled states where the
relation model (an intermediate of `make models` now) had its own, answer "does text A back
text B?" for every consumer. Checked as a reader would: it tells entailment from
contradiction on sentences it never saw, it reads negation, its decomposed and joint forms and its
served graphs agree, and `compare` calls a contradiction a dispute and leaves unrelated sentences
out."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perspect.core.model import bundle
from tests.conftest import COUNCIL_ARTICLES

MODELS = Path(__file__).resolve().parent.parent / "models"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not bundle.is_bundle(MODELS / "argument"),
        reason="the shipped trunk (models/argument) is not in this checkout",
    ),
]

# written for this test: none is in the training data
ENTAIL = [
    ("A woman is slicing onions in a small kitchen.", "Someone is preparing food."),
    ("The council approved the budget by nine votes to one.", "The budget was approved."),
    ("Three boys are kicking a ball across a muddy field.", "Children are playing outside."),
]
CONTRADICT = [
    ("A woman is slicing onions in a small kitchen.", "Nobody is in the kitchen."),
    ("The council approved the budget by nine votes to one.", "The council rejected the budget."),
    ("Three boys are kicking a ball across a muddy field.", "The boys are asleep in their beds."),
]


@pytest.fixture(scope="module")
def trunk():
    from perspect.reranker.stance_trunk import StanceTrunk

    return StanceTrunk.load(MODELS / "argument", serving=True)


def test_the_entry_verifies_names_its_data_and_fits_the_bundle():
    entry = bundle.BundleEntry.read(MODELS / "argument")
    assert bundle.verify(entry) == []
    assert entry.size < 3_000_000  # adapters and heads only: the base comes from its packages
    files = {d["file"] for d in entry.record["data"]}
    assert {"inference/snli.jsonl", "inference/mnli_taxinli.jsonl"} <= files  # the heads' data
    assert "ClaimDiff-S/ClaimDiff-strength-train.json" in files
    metrics = entry.record["dev_metrics"]["relation_heads"]
    assert {"nli_decomposed", "nli_joint", "equivalence_dev_auroc", "claimdiff_dev"} <= set(metrics)
    from perspect.reranker.stance_trunk import read

    man = read(MODELS / "argument")
    assert list(man["heads"])[:2] == ["stance", "argument"]  # the sides' columns stay first
    # beside the relation model's own heads on the same rows, in the same run (the step's report)
    assert man["relation_heads"]["relation"]["nli_joint"]["n"] == metrics["nli_joint"]["n"]
    decisions = man["decisions"]
    assert {"argument", "compare", "news"} <= set(decisions)
    # no evidence cuts: measured below the verdict stack on PERSPECTRUM's links (bench/STUDIES.md)
    assert "evidence" not in decisions


@pytest.mark.parametrize("form", ["joint", "decomposed"])
def test_it_tells_entailment_from_contradiction(trunk, form):
    pairs = ENTAIL + CONTRADICT
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    if form == "joint":
        p = trunk.joint("nli", a, b)
    else:
        p = trunk.pairs("nli", trunk.lower(a), trunk.lower(b))
    assert p.shape == (6, 3) and np.allclose(p.sum(1), 1.0)
    # every contradiction is read as one; the entailments are read as entailing more than the
    # contradictions are (one pair in three still goes wrong in the joint form: held-out
    # accuracy 63-64 %, bench/RESULTS.md)
    assert (p[3:, 2] > p[3:, 0]).all(), p.round(3)
    assert p[:3, 0].mean() > p[3:, 0].max() and p[:3, 2].mean() < p[3:, 2].min(), p.round(3)
    if form == "decomposed":
        assert (p[:3, 0] > p[:3, 2]).all(), p.round(3)


def test_stance_reads_the_claim_and_its_negation_apart(trunk):
    persp = ["Zoo animals suffer in small cages and should be set free."]
    states = trunk.lower(persp)
    closed = trunk.support("Zoos should be closed", states)[0]
    kept = trunk.support("Zoos should not be closed", states)[0]
    assert closed > 0.5 > kept, (closed, kept)


def test_served_graphs_and_pytorch_agree():
    from perspect.reranker.stance_trunk import StanceTrunk

    torch_trunk = StanceTrunk.load(MODELS / "argument")
    served = torch_trunk.for_inference()
    assert served.served
    a, b = [x for x, _ in ENTAIL], [y for _, y in ENTAIL]
    got = served.pairs("nli", served.lower(a), served.lower(b))
    ref = torch_trunk.pairs("nli", torch_trunk.lower(a), torch_trunk.lower(b))
    assert np.abs(got - ref).max() < 0.05  # bf16 PyTorch against fp32 ONNX


@pytest.mark.xfail(
    strict=True,
    reason="issue 41's council example: 'most shoppers come without a car' against 'most "
    "customers drive in' is still read as an agreement by the trunk's joint inference (the "
    "joint reader the bundle's comparator carries reads it as a dispute: "
    "tests/test_shipped_comparator.py)",
)
def test_the_issues_survey_contradiction_is_a_dispute(trunk):
    from perspect.pipeline.compare import Article, SentenceEncoder, compare_articles

    a = Article.from_text("A", "A survey found that most shoppers come into town without a car.")
    b = Article.from_text("B", "According to the survey, most customers drive into town.")
    enc = SentenceEncoder(bundle.resolve(MODELS / "dense"))
    (link,) = compare_articles(a, b, None, enc, stance=trunk).links
    assert link.relation == "weakens"


def test_compare_calls_a_contradiction_a_dispute_and_leaves_unrelated_out(trunk, tmp_path):
    from perspect.pipeline.compare import Article, SentenceEncoder, compare_articles

    a, b = (Article.from_text(t, text) for t, text in zip("AB", COUNCIL_ARTICLES, strict=True))
    enc = SentenceEncoder(bundle.resolve(MODELS / "dense"))
    res = compare_articles(a, b, None, enc, stance=trunk)
    by_a = {x.a: x for x in res.links}
    assert by_a[0].relation == "strengthens" and by_a[0].b == 0
    assert by_a[1].relation == "weakens" and by_a[1].b == 1
    assert 2 not in by_a  # the market and the frog: neither agreement nor dispute
