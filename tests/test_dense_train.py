"""`perspect train --task dense` and `perspect index rebuild`: fine-tune the bi-encoder in-domain and
swap it into an existing index without rebuilding the other retrievers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perspect.core.datasets.perspectrum import load_claims, load_perspectives, tune_claims_of
from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer
from perspect.lab.fitting import train_dense
from perspect.lab.pools import pool_searcher
from perspect.lab.train.dense import FORMAT, DenseProfile
from perspect.retriever.dense import PACKAGED, encode, load_encoder
from perspect.retriever.searcher import Searcher

PROFILE = DenseProfile("test", None, 1.0, 4, 3e-4, 4, max_length=48)


@pytest.fixture(scope="module")
def dense_model(tiny_perspectrum, tmp_path_factory):
    out = tmp_path_factory.mktemp("dense") / "model"
    manifest = train_dense(tiny_perspectrum, out, profile=PROFILE, log=lambda m: None)
    return out, manifest


def _margin(model, data_dir) -> float:
    """Mean over fitted train claims of cos(claim, own perspectives) - cos(claim, others')."""
    _tune, fit = tune_claims_of(data_dir)
    persp = load_perspectives(data_dir)
    ids = sorted(persp)
    pv = encode(model, [persp[i] for i in ids])
    cv = encode(model, [c.text for c in fit])
    sims = cv @ pv.T
    out = []
    for n, c in enumerate(fit):
        own = [k for k, i in enumerate(ids) if i in c.pids]
        other = [k for k, i in enumerate(ids) if i not in c.pids]
        out.append(sims[n, own].mean() - sims[n, other].mean())
    return float(np.mean(out))


def test_training_saves_a_manifest_and_sharpens_train_claims(dense_model, tiny_perspectrum):
    out, _manifest = dense_model
    saved = json.loads((out / "perspect_manifest.json").read_text())
    assert saved["format"] == FORMAT and saved["held_out_tune_claims"] == 1
    assert saved["training"]["steps"] > 0 and set(saved["triples"]) == {
        "relevance",
        "equivalence",
        "evidence",
    }
    # the held-out tune claim is not trained on
    _tune, fit = tune_claims_of(tiny_perspectrum)
    assert saved["triples"]["relevance"] == sum(len(c.pids) for c in fit)
    before = _margin(load_encoder(PACKAGED, 48), tiny_perspectrum)
    after = _margin(load_encoder(str(out), 48), tiny_perspectrum)
    assert after > before + 0.02


def test_rebuild_swaps_the_dense_encoder_and_keeps_the_rest(
    dense_model, tiny_perspectrum, tmp_path
):
    out, _ = dense_model
    s = pool_searcher(tiny_perspectrum, tmp_path, "p", retrievers=("bm25", "dense"))
    old = s.backend("perspectives", "dense").vectors(["1", "2"])
    bm25_before = s.search("nuclear waste", "perspectives", 3, retriever="bm25").hits
    s.close()
    manifest = Indexer("p", home=tmp_path).rebuild("dense", {"model": str(out)})
    assert manifest["config"]["backends"]["dense"]["model"] == str(out)
    assert manifest["operations"][-1]["op"] == "rebuild" and manifest["links"]["perspectives"] > 0
    s2 = Searcher("p", home=tmp_path)
    new = s2.backend("perspectives", "dense").vectors(["1", "2"])
    assert not np.allclose(old, new, atol=1e-3)
    fresh = encode(load_encoder(str(out), 256), [load_perspectives(tiny_perspectrum)[1]])
    assert np.allclose(new[0], fresh[0], atol=1e-4)
    assert s2.search("nuclear waste", "perspectives", 3, retriever="bm25").hits == bm25_before
    dev = load_claims(tiny_perspectrum, "dev")[0]
    assert s2.search(dev.text, "perspectives", 2, retriever="dense").hits


def test_rebuild_adds_a_retriever_the_index_lacks(tiny_perspectrum, tmp_path):
    s = pool_searcher(tiny_perspectrum, tmp_path, "p", retrievers=("bm25",), links=False)
    s.close()
    Indexer("p", home=tmp_path).rebuild("dense", {"model": PACKAGED})
    s2 = Searcher("p", home=tmp_path)
    assert IndexConfig.from_json(s2.manifest["config"]).retrievers == ("bm25", "dense")
    assert s2.search("nuclear waste", "perspectives", 1, retriever="dense").hits
    with pytest.raises(Exception, match="unknown"):
        Indexer("p", home=tmp_path).rebuild("nope")


@pytest.mark.parametrize("task", ["dense", "colbert"])
def test_cli_trains_an_encoder_into_out(task, tiny_base, tiny_perspectrum, tmp_path):
    import subprocess

    from .conftest import perspect_cmd

    out = tmp_path / task
    flags = ["--data", str(tiny_perspectrum), "--base", str(tiny_base), "--out", str(out)]
    r = subprocess.run(
        [*perspect_cmd(), "train", "--task", task, "--profile", "quick", "-q", *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"→ {out}" in " ".join(r.stdout.split())
    assert json.loads((out / "perspect_manifest.json").read_text())["training"]["steps"] > 0
