"""The model bundle: a trained model stored as what training changed, rebuilt from its base.

Checked on a tiny random BERT (the `tiny_base` fixture) standing in for the packaged MiniLM:
only the trained layers are stored, the rebuilt model scores as the trained one, and a
corrupted file or a different base is refused with one line saying how to fix it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from perspect import api
from perspect.core.errors import ModelError
from perspect.core.model import bundle, tensor_store
from perspect.reranker.model import PairModel
from perspect.reranker.pair_net import freeze_lower

PAIRS = [("animals should have rights", "animals feel pain"), ("ban zoos", "zoos save species")]


@pytest.fixture
def trained(tiny_base, tmp_path):
    """A pair model whose top layer and heads moved, as training with one layer trained does."""
    model = PairModel.from_base(tiny_base, tasks=["relevance", "stance"])
    freeze_lower(model.net.encoder, 1)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.net.parameters():
            if p.requires_grad:
                p.add_(0.05 * torch.randn_like(p))
    model.save(tmp_path / "pair")
    return model, tmp_path / "pair"


def test_stores_only_what_training_changed(trained, tiny_base):
    model, folder = trained
    entry = bundle.BundleEntry.read(folder)
    stored = load_file(str(folder / "encoder" / "model.safetensors"))
    assert stored and all(k.startswith(("encoder.layer.1.", "pooler.")) for k in stored)
    assert not any(k.startswith(("embeddings.", "encoder.layer.0.")) for k in stored)
    assert entry.base_id == tiny_base and len(entry.base_sha256) == 64
    assert "encoder/tokenizer.json" in entry.from_base  # identical to the base's: not stored
    full = sum(p.numel() for p in model.net.parameters()) * 4
    assert entry.size < full / 2


def test_rebuilt_model_scores_as_the_trained_one(trained):
    model, folder = trained
    loaded = PairModel.load(folder)
    a = model.logits(PAIRS, ["relevance", "stance"])
    b = loaded.logits(PAIRS, ["relevance", "stance"])
    for t in a:  # large tensors are stored in float16
        assert np.allclose(a[t], b[t], atol=2e-2)
    assert loaded.origin == folder and loaded.source != folder
    assert PairModel.load(folder).source == loaded.source  # materialized once, then reused


def test_corrupted_file_is_refused(trained):
    _, folder = trained
    f = folder / "encoder" / "model.safetensors"
    data = bytearray(f.read_bytes())
    data[-10] ^= 0xFF
    f.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="corrupted") as e:
        PairModel.load(folder)
    assert "git checkout" in e.value.hint
    assert api.verify_models(folder.parent)["pair"]


def test_a_different_base_is_refused(trained, tmp_path, tiny_base):
    _, folder = trained
    other = tmp_path / "other-base"
    shutil.copytree(tiny_base, other)
    m = json.loads((folder / bundle.MANIFEST).read_text())
    m["base"]["id"] = str(other)
    t = load_file(str(other / "model.safetensors"))
    t["embeddings.word_embeddings.weight"][0, 0] += 1
    from safetensors.torch import save_file

    save_file(t, str(other / "model.safetensors"))
    (folder / bundle.MANIFEST).write_text(json.dumps(m))
    with pytest.raises(ModelError, match="not the one"):
        PairModel.load(folder)


def test_models_lists_and_verifies_the_bundle(trained):
    _, folder = trained
    (entry,) = api.models(folder.parent)
    assert entry.name == "pair" and entry.role == "pair"
    assert api.verify_models(folder.parent) == {"pair": []}


def test_pack_refuses_a_large_plain_file(tmp_path, tiny_base):
    full = tmp_path / "full"
    shutil.copytree(tiny_base, full)
    (full / "blob.bin").write_bytes(b"x" * (bundle.MAX_PLAIN_FILE + 1))
    with pytest.raises(ModelError, match="bloat"):
        bundle.pack(full, tmp_path / "out", name="x", role="dense", base_id=tiny_base)
    assert not (tmp_path / "out").exists()


def test_a_cross_encoder_stores_only_its_trained_layers(tiny_base, tmp_path):
    """A task model keeps the base under a prefix ("bert.") and adds a classifier."""
    from sentence_transformers.cross_encoder import CrossEncoder

    ce = CrossEncoder(tiny_base, num_labels=1, device="cpu")
    freeze_lower(ce.model.base_model, 1)
    with torch.no_grad():
        for p in ce.model.parameters():
            if p.requires_grad:
                p.add_(0.05)
    ce.save(str(tmp_path / "full"))
    entry = bundle.pack(tmp_path / "full", tmp_path / "eq", name="eq", role="equivalence",
                        base_id=tiny_base)  # fmt: skip
    stored = load_file(str(tmp_path / "eq" / "model.safetensors"))
    assert any(k.startswith("classifier.") for k in stored)
    assert not any(".layer.0." in k or ".embeddings." in k for k in stored), sorted(stored)
    again = CrossEncoder(str(bundle.resolve(tmp_path / "eq")), device="cpu")
    pairs = [("a claim", "a perspective"), ("another claim", "another one")]
    assert np.allclose(again.predict(pairs), ce.predict(pairs), atol=1e-2)
    assert bundle.verify(entry) == []


def test_a_grown_vocabulary_stores_only_the_new_rows(tiny_base, tmp_path):
    """PyLate's ColBERT adds its [Q] / [D] marker tokens to the base's vocabulary: the embedding
    matrix grows by two rows, and the bundle stores those rows, not the whole matrix again."""
    from pylate import models

    from perspect.retriever.colbert import load_colbert

    m = models.ColBERT(model_name_or_path=str(tiny_base), device="cpu")
    freeze_lower(m[0].auto_model, 1)
    with torch.no_grad():
        for p in m.parameters():
            if p.requires_grad:
                p.add_(0.05)
    m.save(str(tmp_path / "full"))
    entry = bundle.pack(tmp_path / "full", tmp_path / "colbert", name="colbert", role="colbert",
                        base_id=tiny_base)  # fmt: skip
    spec = entry.weights["model.safetensors"]
    ((key, rows),) = spec["grown"].items()
    stored = load_file(str(tmp_path / "colbert" / "model.safetensors"))
    assert "word_embeddings" in key and stored[key].shape[0] == 2  # only the added rows
    full = load_file(str(tmp_path / "full" / "model.safetensors"))
    assert rows + 2 == full[key].shape[0]
    rebuilt = load_file(str(bundle.resolve(tmp_path / "colbert") / "model.safetensors"))
    assert torch.equal(rebuilt[key][:rows], full[key][:rows])
    assert torch.allclose(rebuilt[key], full[key], atol=1e-3)
    docs = ["animals feel pain", "zoos save species"]
    a = load_colbert(tmp_path / "full").encode(docs, is_query=False)
    b = load_colbert(tmp_path / "colbert").encode(docs, is_query=False)
    assert all(np.allclose(x, y, atol=1e-2) for x, y in zip(a, b, strict=True))
    assert bundle.verify(entry) == []


def test_a_resave_keeps_the_recipe_steps(trained):
    """`make models` records each finished step in the entry; a later step that saves the model
    again (a stance round, calibration) must not drop the steps before it, or a fresh clone would
    retrain what it already has."""
    from perspect.lab.recipe import done_steps, record_step

    model, folder = trained
    record_step(folder, "pair", "k1", 10)
    model.save(folder)
    record_step(folder, "stance-1", "k2", 20)
    model.save(folder)
    assert [(s["step"], s["key"]) for s in done_steps(folder)] == [
        ("pair", "k1"),
        ("stance-1", "k2"),
    ]


def test_a_refit_decision_replaces_one_plain_file_and_its_checksum(trained):
    """A refit of fitted decisions (argument_fit --mine-cuts-only) rewrites one manifest inside
    the entry: the entry still verifies and loads, the edit is in its record, and a weights
    file cannot be replaced this way."""
    _, folder = trained
    entry = bundle.BundleEntry.read(folder)
    plain = next(f for f in entry.files if f.endswith(".json") and f not in entry.weights)
    data = json.loads((folder / plain).read_text())
    data["refit_marker"] = 0.88
    bundle.replace_file(folder, plain, json.dumps(data).encode(), "a test refit")
    assert api.verify_models(folder.parent) == {"pair": []}
    assert json.loads((folder / plain).read_text())["refit_marker"] == 0.88
    edits = bundle.BundleEntry.read(folder).record["edits"]
    assert edits[-1]["file"] == plain and edits[-1]["why"] == "a test refit"
    PairModel.load(folder).predict(PAIRS, ["relevance"])
    weights = next(iter(entry.weights))
    with pytest.raises(ModelError, match="not a plain file"):
        bundle.replace_file(folder, weights, b"x", "no")
    assert api.verify_models(folder.parent) == {"pair": []}


def test_a_tokenizer_with_its_own_settings_is_stored_as_its_difference(tiny_base, tmp_path):
    """A tokenizer.json that differs from the base's only in its truncation and padding (every
    MiniLM entry's: 700 KB of vocabulary each) is stored as those keys; the rebuilt folder's
    tokenizer is the trained one, and a damaged patch is refused like any file."""
    from tokenizers import Tokenizer

    full = tmp_path / "full"
    full.mkdir()
    tok = Tokenizer.from_file(f"{tiny_base}/tokenizer.json")
    tok.enable_truncation(max_length=64)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.save(str(full / "tokenizer.json"))
    (full / "config.json").write_text("{}")
    entry = bundle.pack(full, tmp_path / "entry", name="t", role="dense", base_id=tiny_base)
    stored = tmp_path / "entry" / "tokenizer.json"
    assert "tokenizer.json" in entry.patched and "tokenizer.json" not in entry.from_base
    assert stored.stat().st_size < (full / "tokenizer.json").stat().st_size / 50
    rebuilt = Tokenizer.from_file(str(bundle.materialize(tmp_path / "entry") / "tokenizer.json"))
    text = "Animals should have lawful rights, says the zoo's keeper."
    assert rebuilt.encode(text).ids == tok.encode(text).ids
    assert rebuilt.truncation == tok.truncation and rebuilt.padding == tok.padding
    stored.write_text(stored.read_text().replace("64", "65"))
    with pytest.raises(ModelError, match="corrupted"):
        bundle.materialize(tmp_path / "entry")


def test_a_trained_matrix_is_stored_as_its_int8_difference_from_the_base(
    trained, tiny_base, tmp_path, monkeypatch
):
    """A layer training moved is stored as int8 differences from the base's (a scale a row): half
    of float16's bytes, and rebuilt closer to the trained weights than float16 keeps them. (The
    tiny base's matrices are under the size that is stored so; the size is lowered here.)"""
    from perspect.core.paths import resolve_base

    model, _ = trained
    monkeypatch.setattr(tensor_store, "HALF_MIN_ELEMENTS", 256)
    folder = tmp_path / "pair8"
    model.save(folder)
    entry = bundle.BundleEntry.read(folder)
    spec = entry.weights["encoder/model.safetensors"]
    stored = load_file(str(folder / "encoder" / "model.safetensors"))
    assert spec["int8_delta"] and all(stored[k].dtype == torch.int8 for k in spec["int8_delta"])
    assert all(k + bundle.SCALE in stored for k in spec["int8_delta"])
    rebuilt = load_file(str(bundle.materialize(folder) / "encoder" / "model.safetensors"))
    base = load_file(str(Path(resolve_base(tiny_base)) / "model.safetensors"))
    trained_sd = {k: v.detach() for k, v in model.net.encoder.state_dict().items()}
    for k in spec["int8_delta"]:
        want, got = trained_sd[k].float(), rebuilt[k].float()
        moved = (want - base[bundle._base_key(k, base)]).abs().max()
        assert (got - want).abs().max() <= moved / 200  # half a step of 127 a row, at most
    loaded = PairModel.load(folder)
    a = model.logits(PAIRS, ["relevance", "stance"])
    b = loaded.logits(PAIRS, ["relevance", "stance"])
    assert all(np.allclose(a[t], b[t], atol=1e-2) for t in a)
