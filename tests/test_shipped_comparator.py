"""The shipped ClaimDiff comparator (models/comparator), end to end: it verifies, keeps unrelated
pairs out under its document-stream thresholds, reads direction, and `perspect compare` runs on two
small hand-written articles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perspect.core.model import bundle
from tests.conftest import run_cli

MODELS = Path(__file__).resolve().parent.parent / "models"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not bundle.is_bundle(MODELS / "comparator"),
        reason="the shipped comparator (models/comparator) is not in this checkout",
    ),
]

# sentences of different stories: no one bears on another
UNRELATED = [
    ("The stadium will host the cup final in June.", "Inflation rose to 3 percent in March."),
    ("A new species of frog was found in Peru.", "The senator resigned after the vote."),
    ("The museum reopened after a two-year renovation.", "Oil prices fell for a third week."),
    ("Heavy snow closed the mountain pass on Sunday.", "The company cut 200 jobs at its plant."),
    ("The court upheld the ban on street vendors.", "Scientists mapped the genome of wheat."),
    ("Ticket sales for the festival doubled.", "The bridge will be closed for repairs."),
    ("The central bank kept rates unchanged.", "A rare comet will be visible next week."),
    ("The school board approved a new budget.", "Wildfires burned 10,000 acres in Oregon."),
]


@pytest.fixture(scope="module")
def comparator():
    from perspect.reranker.comparator import Comparator

    return Comparator.load(MODELS / "comparator")


def test_the_entry_verifies_and_stays_small():
    entry = bundle.BundleEntry.read(MODELS / "comparator")
    assert bundle.verify(entry) == [] and entry.size < 3_000_000
    assert entry.record.get("dev_metrics", {}).get("dev") and entry.record.get("data")


def test_unrelated_pairs_do_not_pass_the_relatedness_gate():
    """Sentences of different stories fall under the gate that news and compare apply before the
    comparator (the comparator alone was trained on same-story pairs only, and calls some of
    these "strengthen")."""
    import numpy as np

    from perspect.pipeline.compare import CompareConfig, SentenceEncoder

    enc = SentenceEncoder(bundle.resolve(MODELS / "dense"))
    a = enc.encode([x for x, _ in UNRELATED])
    b = enc.encode([y for _, y in UNRELATED])
    cos = (a * b).sum(1)
    assert np.all(cos < CompareConfig().min_similarity), cos.round(2)


def test_compare_of_unrelated_articles_finds_nothing(tmp_path):
    (tmp_path / "a.md").write_text("# A\n" + " ".join(x for x, _ in UNRELATED))
    (tmp_path / "b.md").write_text("# B\n" + " ".join(y for _, y in UNRELATED))
    got = json.loads(
        run_cli("compare", str(tmp_path / "a.md"), str(tmp_path / "b.md"), "--json").stdout
    )
    # 64 sentence pairs of different stories: the gate leaves a few near ones ("museum reopened
    # after a renovation" / "bridge closed for repairs"), and the comparator over-calls those
    assert got["share"]["strengthens"] + got["share"]["weakens"] <= 0.25, got


def test_direction_changes_the_scores(comparator):
    a = "Inspectors found new cracks in the bridge in March."
    b = "The bridge is now safe for heavy trucks."
    ab, _ = comparator.scores([(a, b)])
    ba, _ = comparator.scores([(b, a)])
    assert abs(float(ab[0, 2]) - float(ba[0, 2])) > 1e-4


def test_compare_two_articles(tmp_path):
    (tmp_path / "a.md").write_text(
        "# City adds bike lanes\nThe city opened 20 km of protected bike lanes this year. "
        "Cycling injuries fell by a third on the new routes. Shop owners on Main Street "
        "reported more customers.\n"
    )
    (tmp_path / "b.md").write_text(
        "# Bike lanes anger drivers\nDrivers say the new bike lanes cause traffic jams. "
        "Cycling on the new routes is dangerous, critics claim. Shops on Main Street lost "
        "parking spaces.\n"
    )
    r = run_cli("compare", str(tmp_path / "a.md"), str(tmp_path / "b.md"), "--json")
    got = json.loads(r.stdout)
    assert got["a"]["sentences"] == 3 and got["b"]["sentences"] == 3
    assert got["candidates"] >= 1
    for link in got["agreement"] + got["dispute"]:
        assert link["a_text"] and all(w in link["a_text"] for w in link["rationale"])


def test_compare_finds_disputes_the_stance_trunk_reads(monkeypatch):
    """bench/compare_cases.json's first three hand-written article pairs (30 aligned sentence
    pairs, 19 contradicting; the later cases are measured by bench/compare_cases.py): the
    comparator alone linked none as a dispute, the stance trunk 6; with the relation model the
    bundle ships 10, and no agreement becomes a dispute."""
    from perspect import api

    if not bundle.is_bundle(MODELS / "relation"):
        pytest.skip("the shipped relation model (models/relation) is not in this checkout")
    monkeypatch.setenv("PERSPECT_MODEL", str(MODELS / "pair"))
    monkeypatch.setenv("PERSPECT_DENSE_MODEL", str(MODELS / "dense"))
    cases = json.loads((MODELS.parent / "bench" / "compare_cases.json").read_text())["cases"]
    cases = [c for c in cases if "kind" not in c]  # the three of issue 33
    comparer = api.Comparer(MODELS / "comparator")
    found = wrong = 0
    for case in cases:
        a = "\n\n".join(p[0] for p in case["pairs"])
        b = "\n\n".join(p[1] for p in case["pairs"])
        res = comparer.compare((case["name"], a), (case["name"], b))
        gold = {i: g for i, (_, _, g) in enumerate(case["pairs"])}
        for x in res.links:
            if x.relation == "weakens" and x.a == x.b:
                found += gold[x.a] == "dispute"
                wrong += gold[x.a] == "agree"
    assert found >= 8 and wrong == 0, (found, wrong)


# -- the shipped adapters in peft's layout: the same numbers as before ----------------------------
# Fixed pairs and the shipped comparator's outputs on PyTorch, computed before its adapters were
# converted to peft's layout: with the hand-written LoRA layers the comparator had until then, over
# the entry as it was (perspect.comparator/1, adapter.safetensors, as of commit 1bebb1d).
# Relation probabilities in RELATIONS order, and the rationale probability of each token of A.
PEFT_PAIRS = [
    (
        "Inspectors found new cracks in the bridge in March.",
        "The bridge is now safe for heavy trucks.",
    ),
    (
        "The raise lifted pay for two million workers.",
        "Higher minimum wages help low-paid workers.",
    ),
    ("Small firms cut hours after the raise.", "Higher minimum wages help low-paid workers."),
    ("The stadium will host the cup final in June.", "Inflation rose to 3 percent in March."),
]
# fmt: off
BEFORE_RELATIONS = [
    [0.7589396, 0.2398281, 0.0012323],
    [0.0239431, 0.9760177, 0.0000393],
    [0.0588197, 0.9411420, 0.0000383],
    [0.3591952, 0.6405203, 0.0002845],
]
BEFORE_RATIONALE = [
    [0.0733094, 0.8717158, 0.9518976, 0.9541879, 0.9372056,
     0.8897928, 0.9475010, 0.2291068, 0.2342309, 0.5186537],
    [0.8494220, 0.9446797, 0.9635108, 0.8811830, 0.8850405,
     0.9549680, 0.9010100, 0.8636480, 0.7839658],
    [0.9337968, 0.9111210, 0.9460837, 0.7935795, 0.7979066,
     0.7376656, 0.8319150, 0.7149824],
    [0.7235687, 0.9163052, 0.8324484, 0.9396100, 0.8807267,
     0.8850299, 0.9252967, 0.3970743, 0.3928201, 0.6647470],
]
# fmt: on


@pytest.mark.parametrize("runtime", ["torch", "onnx"])
def test_converted_adapters_give_the_outputs_of_before(comparator, runtime):
    """On PyTorch (the merged peft adapters) and as a search serves it (the graph exported from
    them, on ONNX Runtime): the numbers of before, to 1e-5."""
    import numpy as np

    from perspect.reranker.comparator import Comparator

    model = comparator if runtime == "torch" else Comparator.open(MODELS / "comparator")
    assert (model.net is None) == (runtime == "onnx")
    probs, toks = model.scores(PEFT_PAIRS)
    np.testing.assert_allclose(probs, BEFORE_RELATIONS, atol=1e-5, rtol=0)
    assert [len(t) for t in toks] == [len(r) for r in BEFORE_RATIONALE]
    for got, want in zip(toks, BEFORE_RATIONALE, strict=True):
        np.testing.assert_allclose([p for _, _, p in got], want, atol=1e-5, rtol=0)


def test_peft_itself_loads_the_shipped_adapters():
    """The entry's adapter folder is peft's own layout: PeftModel.from_pretrained reads it, and its
    merged encoder is the one the comparator serves, weight for weight."""
    import torch
    from peft import PeftModel

    from perspect.reranker.comparator import ADAPTER, Comparator
    from perspect.reranker.pair_net import load_encoder

    full = bundle.resolve(MODELS / "comparator")
    _, enc = load_encoder(str(full / "encoder"))
    merged = PeftModel.from_pretrained(enc, str(full / ADAPTER)).merge_and_unload()
    ours = Comparator.load(MODELS / "comparator").net.encoder.state_dict()
    theirs = merged.state_dict()
    assert set(ours) == set(theirs)
    assert all(torch.equal(ours[k], theirs[k]) for k in ours)
