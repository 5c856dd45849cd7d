"""One life cycle for served models (reranker.served) and one factory from a bundle entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perspect.core.errors import ModelError
from perspect.reranker.comparator import Comparator
from perspect.reranker.equivalence_ce import EquivalenceModel
from perspect.reranker.factory import SERVED, served_class
from perspect.reranker.model import PairModel

MODELS = Path(__file__).resolve().parent.parent / "models"


@pytest.mark.parametrize(
    ("entry", "cls"),
    [("pair", PairModel), ("equivalence", EquivalenceModel), ("comparator", Comparator)],
)
def test_the_factory_picks_each_shipped_entrys_class(entry, cls):
    assert served_class(MODELS / entry) is cls


def test_the_factory_refuses_what_it_cannot_serve(tmp_path):
    with pytest.raises(ModelError, match="not one served"):
        served_class(MODELS / "dense")  # a bi-encoder: served by its retriever, not here
    with pytest.raises(ModelError, match="holds no served model"):
        served_class(tmp_path)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "someone.else/1"}))
    with pytest.raises(ModelError, match="holds no served model"):
        served_class(tmp_path)


def test_a_full_model_folder_is_known_by_its_manifest_format(tmp_path):
    for cls in SERVED:
        folder = tmp_path / cls.ROLE
        folder.mkdir()
        (folder / cls.MANIFEST).write_text(json.dumps({"format": cls.FORMAT}))
        assert served_class(folder) is cls


def test_an_incomplete_entry_is_one_line_naming_the_missing_file(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"format": PairModel.FORMAT}))
    with pytest.raises(ModelError, match="incomplete: encoder missing") as e:
        PairModel.read(tmp_path)
    assert e.value.hint == PairModel.TRAIN


def test_each_served_model_names_its_life_cycle():
    for cls in SERVED:
        for attr in ("FORMAT", "MANIFEST", "WHAT", "TRAIN", "GRAPH", "WEIGHTS", "ROLE"):
            assert getattr(cls, attr), (cls.__name__, attr)
    assert len({c.GRAPH for c in SERVED}) == len(SERVED)  # no two share a graph file


# -- the bundle's models as one typed value ------------------------------------------------------
ROOT = Path(__file__).resolve().parent.parent


def test_each_model_is_one_field_and_one_loader():
    """Adding a model to the bundle: a field of `Models` and a loader of the same name."""
    import dataclasses

    from perspect.reranker import factory

    fields = [f.name for f in dataclasses.fields(factory.Models)]
    assert fields[0] == "pair" and set(fields[1:]) == set(factory.LOADERS)
    with pytest.raises(ValueError, match="no model 'nope'"):
        factory.load(["nope"])


@pytest.mark.slow
@pytest.mark.skipif(
    not (MODELS / "pair" / "bundle.json").is_file(), reason="the shipped bundle is not here"
)
def test_the_shipped_pair_model_comes_with_what_it_names(monkeypatch):
    import dataclasses

    from perspect.reranker import factory
    from perspect.reranker.stance_trunk import StanceTrunk

    for var in ("PERSPECT_MODEL", "PERSPECT_COMPARATOR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PERSPECT_MODELS", str(MODELS))
    # a new install's first load exports the graphs (what `perspect models prepare` does) and
    # keeps the PyTorch model it exported from; every later load serves the graphs alone. The
    # first load here makes this test independent of whichever test ran before it.
    factory.load()
    got = factory.load()
    assert isinstance(got.pair, PairModel) and got.pair.net is None  # on ONNX Runtime
    assert isinstance(got.equivalence, EquivalenceModel) and got.equivalence._onnx is not None
    assert isinstance(got.trunk, StanceTrunk) and got.trunk.served
    assert got.comparator is None  # not asked for
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.pair = None
    on_torch = factory.load(["pair", "trunk"], factory.TORCH)
    assert on_torch.pair.net is not None and not on_torch.trunk.served
    assert on_torch.equivalence is None
    # a comparator: the bundle's where asked for; one named that is missing is an error
    assert isinstance(factory.load(["comparator"]).comparator, Comparator)
    monkeypatch.setenv("PERSPECT_COMPARATOR", str(MODELS / "nothing-here"))
    assert factory.load(["comparator"]).comparator is None  # no comparator: no news
    with pytest.raises(ModelError, match="no comparator"):
        factory.load(["comparator"], entries={"comparator": MODELS / "nothing-here"})


def test_models_are_loaded_only_through_the_factory():
    """One way to load models (issue 43): outside reranker/ (where the factory and the models
    live), nothing opens a served model class by class; the trainers in lab/train/ make and
    resume the networks they train."""
    import re

    opens = re.compile(
        r"\b(PairModel|EquivalenceModel|Comparator|StanceTrunk)\.(load|serving|open)\(|"
        r"\bload_for\(|\._query_session\("
    )
    found = []
    for top in ("perspect", "indexer", "retriever", "tui"):
        for f in sorted((ROOT / top).rglob("*.py")):
            if f.is_relative_to(ROOT / "perspect" / "lab" / "train"):
                continue
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                if opens.search(line) and f != ROOT / "retriever" / "dense.py":
                    found.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "\n".join(found)
