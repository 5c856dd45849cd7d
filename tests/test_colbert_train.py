"""`perspect train --task colbert`: PyLate contrastive training on PERSPECTRUM train triples, saved
with the same manifest conventions as the other models (tiny random BERT, a few steps)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perspect.core.datasets.perspectrum import load_perspectives, tune_claims_of
from perspect.core.model import bundle
from perspect.lab.fitting import train_colbert
from perspect.lab.train.colbert import ColBERTProfile

pytestmark = pytest.mark.slow

# every layer trained: the tiny BERT's embeddings are random, unlike a pretrained base's
PROFILE = ColBERTProfile(
    "test", None, 1.0, 4, 3e-4, 400, 100, query_maxlen=16, doc_maxlen=32, train_layers=None
)


def _margin(model, data_dir) -> float:
    """Mean MaxSim margin of a claim's own perspectives over the other claims' perspectives."""
    _tune, fit = tune_claims_of(data_dir)
    persp = load_perspectives(data_dir)
    ids = sorted(persp)
    docs = model.encode([persp[i] for i in ids], is_query=False)
    out = []
    for c in fit:
        q = model.encode([c.text], is_query=True)[0]
        s = np.array([(q @ d.T).max(axis=1).sum() for d in docs])
        own = [k for k, i in enumerate(ids) if i in c.pids]
        other = [k for k, i in enumerate(ids) if i not in c.pids]
        out.append(s[own].mean() - s[other].mean())
    return float(np.mean(out))


def test_colbert_training_saves_a_loadable_model_with_a_manifest(
    tiny_base, tiny_perspectrum, tmp_path
):
    from pylate import models

    out = tmp_path / "colbert"
    before = models.ColBERT(model_name_or_path=tiny_base, device="cpu", query_length=16)
    before.save(str(tmp_path / "before"))
    before = models.ColBERT(model_name_or_path=str(tmp_path / "before"), device="cpu")
    manifest = train_colbert(
        tiny_perspectrum, out, base=str(tmp_path / "before"), profile=PROFILE, log=lambda m: None
    )
    saved = json.loads((out / "perspect_manifest.json").read_text())
    assert saved == manifest and saved["format"] == "perspect.colbert/1"
    assert saved["training"]["steps"] > 0 and saved["triples"]["perspectives"] > 0
    assert not list(tmp_path.glob(".colbert.tmp-*")), "staging folder left behind"
    assert (out / "onnx" / "colbert-query.onnx").is_file(), "the query graph ships with the model"
    assert bundle.verify(bundle.BundleEntry.read(out)) == []  # a bundle entry: only what moved
    after = models.ColBERT(model_name_or_path=str(bundle.resolve(out)), device="cpu")
    m0, m1 = _margin(before, tiny_perspectrum), _margin(after, tiny_perspectrum)
    assert m1 > m0 + 0.02
