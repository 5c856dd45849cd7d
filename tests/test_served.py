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
