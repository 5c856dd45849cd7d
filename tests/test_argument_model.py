"""The argument model (issue 55): its rows keep what measures it out of training, its training
resumes from a checkpoint outside the repository, the shipped model reads for / against /
neither, and the consumers act on it (sides, evidence verdicts and reasons, mining).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from perspect.core.model import bundle
from tests.conftest import PERSPECTRUM

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
ARGUMENT_DATA = ROOT.parent / "shared" / "data" / "argument"
needs_data = pytest.mark.skipif(
    not (ARGUMENT_DATA / "ukp_sentential.jsonl").is_file()
    or not (PERSPECTRUM / "perspective_pool_v1.0.json").is_file(),
    reason=f"the argument data ({ARGUMENT_DATA}) or PERSPECTRUM ({PERSPECTRUM}) is absent",
)
needs_model = pytest.mark.skipif(
    not bundle.is_bundle(MODELS / "argument"), reason="no models/argument in this checkout"
)


@needs_data
@pytest.mark.data
def test_rows_keep_what_measures_the_model_out_of_training():
    import random

    from perspect.lab.train import argument_data as ad

    ukp = ad.ukp_rows(ARGUMENT_DATA)
    trained_topics = {r.a for r in ukp["train"]}
    assert trained_topics and not trained_topics & set(ad.UKP_HELD_OUT)
    assert all(len(ukp[t]) > 1000 for t in ad.UKP_HELD_OUT)
    ibm = ad.ibm_rows(ARGUMENT_DATA)
    assert not {r.a for r in ibm["train"]} & {r.a for r in ibm["test"]}  # motions unseen
    rows, held = ad.perspectrum_rows(PERSPECTRUM, random.Random(1))
    trained_claims = {r.a for r in rows}
    from perspect.core.datasets.perspectrum import load_claims

    both = {c.text for c in load_claims(PERSPECTRUM, "train")}  # a text PERSPECTRUM puts in both
    both &= {c.text for c in load_claims(PERSPECTRUM, "dev")}
    assert not (trained_claims & {r.a for r in held["dev"] + held["tune"]}) - both
    labels = {r.label for r in rows}
    assert labels == {ad.FOR, ad.AGAINST, ad.NEITHER}
    neg = [r for r in rows if r.source == "perspectrum-negated"]
    assert neg and all(r.label != ad.NEITHER for r in neg)


@needs_data
@pytest.mark.slow
def test_training_resumes_from_its_checkpoint_and_restarts_for_another_recipe(tmp_path):
    from perspect.lab.train import argument as trainer

    def args(seed: int) -> argparse.Namespace:
        a = trainer.parser().parse_args(["--out", str(tmp_path / "out")])
        a.data, a.argument = PERSPECTRUM, ARGUMENT_DATA
        a.work, a.limit, a.epochs, a.seed = tmp_path / "work", 24, 1.0, seed
        # the relation model (rank 32, as this run): an intermediate stage, where it was made
        from perspect.lab.recipe import intermediate_dir

        rel = intermediate_dir(MODELS) / "relation"
        a.warm_start = rel if bundle.is_bundle(rel) else None
        return a

    logs: list[str] = []
    trainer.run(args(3), logs.append)
    assert (tmp_path / "work" / "checkpoint.pt").is_file()
    assert (tmp_path / "out" / "heads.safetensors").is_file()
    first = list(logs)
    assert not any(m.startswith("resumed at step") for m in first)
    logs.clear()
    trainer.run(args(3), logs.append)  # the states from disk, the training already done
    assert any(m.startswith("lower states:") and " 0 to compute" in m for m in logs), logs
    assert any(m.startswith("resumed at step") for m in logs), logs
    logs.clear()
    trainer.run(args(4), logs.append)  # another recipe: starts over
    assert any("another recipe's: starting over" in m for m in logs), logs


@pytest.fixture(scope="module")
def model():
    if not bundle.is_bundle(MODELS / "argument"):
        pytest.skip("no models/argument in this checkout")
    from perspect.reranker.argument import ArgumentModel

    return ArgumentModel.load(MODELS / "argument", serving=True)


@needs_model
def test_the_shipped_model_reads_for_against_and_neither(model):
    from perspect.reranker.argument import AGAINST, FOR, NEITHER

    # ("Zoos should be closed" is read the other way round: a passive call to act on a thing, the
    # stance trunk's second reading's case, bench/RESULTS.md "The argument model")
    claim = "Zoos do more harm than good"
    texts = [
        "Keeping wild animals in small cages causes them lifelong suffering.",
        "Zoos save endangered species from extinction through breeding programmes.",
        "The train to Lyon leaves at nine in the morning.",
    ]
    p = model.judge_texts([claim] * 3, texts)
    assert np.allclose(p.sum(1), 1.0)
    assert p[0, FOR] > p[0, AGAINST]
    assert p[1, AGAINST] > p[1, FOR]
    assert p[2, NEITHER] > max(p[2, FOR], p[2, AGAINST])
    assert model.cuts is not None and 0 < model.cuts.neither_at <= 1.01


@needs_model
def test_a_perspective_that_takes_no_side_leaves_the_sides_unless_a_reader_placed_it(model):
    from perspect.core.result import Member
    from perspect.pipeline.arguing import Arguing

    members = [
        Member("1", "Zoos let children see animals they would never see otherwise.", 0.9, 0.2),
        Member("2", "The train to Lyon leaves at nine in the morning.", 0.6, 0.5),
        Member("3", "The train to Lyon leaves at nine.", 0.6, 0.5, corrected=True),
    ]
    arguing = Arguing(model, None)
    claim = model.claim_lower("Zoos should be closed")
    keep, out = arguing.sided(claim, members)
    assert [m.id for m in keep] == ["1", "3"] and [m.id for m in out] == ["2"]
    arguing.cuts = dataclasses.replace(model.cuts, neither_at=1.01)  # nothing reaches it
    assert arguing.sided(claim, members) == (members, [])


@needs_model
@pytest.mark.slow
def test_a_shown_reason_argues_for_its_perspective_and_backing_never_argues_against(model):
    import tempfile

    from perspect import api
    from perspect.api import Perspect, Source
    from tests.conftest import write_json
    from tests.test_shipped_bundle import CLAIM, EVIDENCE, POOL  # the small real pool

    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        pf = write_json(d / "p.json", [{"id": i, "text": t} for i, t, _ in POOL])
        ef = write_json(d / "e.json", [{"id": i, "text": t} for i, t in EVIDENCE])
        config = api.index_config(["bm25", "dense"])
        api.build_index("real", [Source("perspectives", pf), Source("evidence", ef)],
                        home=d, config=config)  # fmt: skip
        with Perspect.open("real", home=d, model=MODELS / "pair") as p:
            res = p.search(CLAIM)
    cuts = model.cuts
    shown = [(c, e) for c in res.clusters for e in c.evidence]
    assert shown
    reasons = [c for c in res.clusters if c.why is not None]
    assert reasons, "no reason shown"
    pf = model.judge_texts(
        [c.representative.text for c in reasons], [c.why.sentence for c in reasons]
    )
    assert (pf[:, 0] >= cuts.for_at).all()
    for c in res.clusters:  # ordered by P(for): every paragraph shown as backing comes first
        verdicts = [e.verdict for e in c.evidence if e.verdict != "contradicts"]
        assert verdicts == sorted(verdicts, key=lambda v: v != "supports"), verdicts


@needs_model
def test_a_sentence_judged_once_is_read_back_from_the_index_by_a_new_process(model, tmp_path):
    """The (perspective, sentence) judgment is kept with the index: a second engine (a new
    process) reads it instead of running the model; a damaged file is computed again."""
    from types import SimpleNamespace

    from perspect.core.index.kept_states import KEPT
    from perspect.core.index.links import Link
    from perspect.pipeline.arguing import JUDGMENTS, Arguing

    searcher = SimpleNamespace(
        dir=SimpleNamespace(root=tmp_path), pools={"perspectives": 1}, stance_states=lambda p: None
    )
    para = SimpleNamespace(text="Zoo cages are tiny. Animals kept in them pace and suffer.")
    links = [[Link("e1", 0.5, 0.5, why=(20, len(para.text)))]]
    texts = {"p1": "Keeping animals in zoos is cruel."}
    first = Arguing(model, searcher).judge_links(["p1"], texts, links, {"e1": para})
    assert first[0][0].entail is not None and (tmp_path / JUDGMENTS).is_file()
    assert (tmp_path / KEPT).is_file()  # and both texts' lower states (pipeline.lower)

    def no_model(*_a, **_k):
        raise AssertionError("the model ran for a judgment kept with the index")

    again = Arguing(model, searcher)
    again.model = SimpleNamespace(judge=no_model, lower=no_model, states_key="k")
    second = again.judge_links(["p1"], texts, links, {"e1": para})
    assert second[0][0].entail == pytest.approx(first[0][0].entail)
    (tmp_path / JUDGMENTS).write_bytes(b"not a database")
    third = Arguing(model, searcher).judge_links(["p1"], texts, links, {"e1": para})
    assert third[0][0].entail == pytest.approx(first[0][0].entail, abs=1e-6)
