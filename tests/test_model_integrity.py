"""Model checks cover what runs: the ONNX graphs (and their optimized copies) a search loads are
checked against the checksum recorded when they were made, a model folder without its
`bundle.json` is refused (not skipped), and ColBERT is checked like the other models."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perspect import Perspect, api
from perspect.core.errors import ModelError
from perspect.core.index.config import IndexConfig
from perspect.core.model import onnxrt
from perspect.indexer.indexer import Indexer, Source
from perspect.reranker.model import PairModel

from .conftest import write_jsonl


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture
def served_pair(tiny_pair_model, tmp_path):
    """A bundle root holding the tiny pair model with its graph and optimized copy made."""
    root = tmp_path / "models"
    folder = root / "pair"
    shutil.copytree(tiny_pair_model, folder, ignore=shutil.ignore_patterns("onnx"))
    assert PairModel.load(folder).for_inference()._onnx is not None
    onnxrt._SESSIONS.clear()
    assert PairModel.serving(folder) is not None
    onnxrt._SESSIONS.clear()
    return folder


@pytest.mark.parametrize("graph", ["pair.onnx", "pair.opt-*.onnx"])
def test_an_edited_graph_fails_verify_and_is_never_served(served_pair, graph):
    target = sorted((served_pair / "onnx").glob(graph))[0]
    if graph == "pair.onnx":  # the graph itself is loaded when its optimized copy is not there
        for opt in (served_pair / "onnx").glob("pair.opt-*"):
            opt.unlink()
    _flip(target)
    (problems,) = api.verify_models(served_pair.parent).values()
    assert problems and target.name in problems[0] and "sha256 mismatch" in problems[0]
    with pytest.raises(ModelError, match="sha256 mismatch") as e:
        PairModel.serving(served_pair)
    assert "perspect models prepare" in e.value.hint
    with pytest.raises(ModelError):  # refused at every load, not only the first
        PairModel.serving(served_pair)
    onnxrt._SESSIONS.clear()


def test_a_model_without_bundle_json_is_an_error_not_a_skip(served_pair, monkeypatch):
    monkeypatch.setenv("PERSPECT_MODELS", str(served_pair.parent))  # the bundle's folders
    (served_pair / "bundle.json").unlink()
    problems = api.verify_models(served_pair.parent)
    assert problems["pair"] == [f"{served_pair / 'bundle.json'} is missing: nothing of "
                                f"{served_pair} can be checked"]  # fmt: skip
    assert api.unchecked_models(served_pair.parent) == [served_pair]  # not silently gone
    for load in (PairModel.load, PairModel.serving):
        with pytest.raises(ModelError, match=r"bundle\.json is missing"):
            load(served_pair)


@pytest.mark.plaid
def test_colbert_is_checked_like_the_others(tiny_colbert, tmp_path):
    """A tampered query graph of the ColBERT model is refused at the next search."""
    model = tmp_path / "colbert"
    shutil.copytree(tiny_colbert, model, ignore=shutil.ignore_patterns("onnx"))
    pool = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "text": "zoos keep species alive"}])
    cfg = IndexConfig(("bm25", "colbert"), {"colbert": {"model": str(model), "doc_maxlen": 32}})
    Indexer("c", home=tmp_path / "h", config=cfg).build([Source("perspectives", pool)])
    onnxrt._SESSIONS.clear()
    with Perspect.open("c", home=tmp_path / "h") as p:
        assert p.retrieve("zoos", retriever="colbert").hits[0].id == "a"
    graph = sorted((model / "onnx").glob("colbert-query.opt-*.onnx"))[0]
    _flip(graph)
    onnxrt._SESSIONS.clear()
    with Perspect.open("c", home=tmp_path / "h") as p, pytest.raises(ModelError, match="sha256"):
        p.retrieve("zoos", retriever="colbert")
    onnxrt._SESSIONS.clear()


@pytest.mark.plaid
def test_a_flipped_byte_in_the_shipped_colberts_weights_stops_its_searches(tmp_path, monkeypatch):
    from .conftest import ROOT, run_cli

    root = tmp_path / "models"
    shutil.copytree(ROOT / "models", root)
    monkeypatch.setenv("PERSPECT_MODELS", str(root))
    monkeypatch.setenv("PERSPECT_COLBERT_MODEL", str(root / "colbert"))
    pool = write_jsonl(tmp_path / "p.jsonl", [{"id": "a", "text": "zoos keep species alive"}])
    home = str(tmp_path / "h")
    run_cli("index", "build", "--name", "c", "--home", home, "--retrievers", "bm25,colbert",
            "--perspectives", str(pool), "-q", timeout=600)  # fmt: skip
    search = ("search", "zoos", "--index", "c", "--home", home, "--retriever", "colbert")
    assert "zoos keep species alive" in run_cli(*search, timeout=600).stdout
    _flip(root / "colbert" / "model.safetensors")
    r = run_cli(*search, ok=False, timeout=600)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "model.safetensors is corrupted" in r.stderr
    v = run_cli("models", "verify", ok=False)
    assert (
        v.returncode == 2
        and "✗ colbert" in v.stdout
        and "model.safetensors is corrupted" in v.stdout
    )
