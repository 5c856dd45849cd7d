"""Pairwise models: a tiny BERT built here trains, saves, loads; manifest checks; calibration."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest
import torch

from perspect.core.errors import ModelError
from perspect.core.progress import NullReporter
from perspect.lab.train.pair import Profile, fit_platt, length_bucketed_batches, train_steps
from perspect.lab.train.pair_data import Example
from perspect.reranker.model import PairModel
from perspect.reranker.roles import pair_for
from tests.conftest import restamp_bundle


def _toy(n: int = 32) -> list[Example]:
    rnd = random.Random(0)
    out = []
    for i in range(n):
        pos = i % 2 == 0
        b = "cats are wonderful pets" if pos else "taxes fund the roads"
        out.append(Example("relevance", f"claim about cats {rnd.random():.2f}", b, float(pos)))
    return out


def test_tiny_model_learns_and_round_trips(tiny_base, tmp_path):
    model = PairModel.from_base(tiny_base)
    ex = _toy()
    pairs = [(e.a, e.b) for e in ex]
    labels = np.array([e.label for e in ex])

    def loss() -> float:
        z = model.logits(pairs, ["relevance"])["relevance"]
        return float(
            torch.nn.functional.binary_cross_entropy_with_logits(
                torch.tensor(z), torch.tensor(labels, dtype=torch.float32)
            )
        )

    before = loss()
    prof = Profile("t", None, None, {}, batch_size=8, lr=3e-3, max_minutes=1.0, warmup=0.0)
    batches = [ex[i : i + 8] for i in range(0, 32, 8)] * 6
    stats = train_steps(model, batches, prof, NullReporter(), print)
    assert stats["batches_done"] == 24
    assert loss() < before * 0.8

    model.manifest["thresholds"]["relevance"] = 0.42
    model.save(tmp_path / "m")
    again = PairModel.load(tmp_path / "m", tasks=["relevance", "stance"])
    np.testing.assert_allclose(
        again.logits(pairs, ["relevance", "stance"])["stance"],
        model.logits(pairs, ["relevance", "stance"])["stance"],
        atol=1e-3,  # the bundle keeps large tensors in float16 (perspect.core.model.bundle)
    )
    assert again.threshold("relevance") == 0.42
    m = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert m["base_model"] == tiny_base and m["format"] == "perspect.pairmodel/1"


def test_roles_share_one_model(tiny_base):
    """Relevance and stance from one forward pass (what a search runs), equal to each head's
    own; equivalence and evidence through the same model, their pairs built by `pair_for`."""
    model = PairModel.from_base(tiny_base)
    claim = "zoos should be banned"
    pairs = [pair_for("relevance", claim, p) for p in ["zoos save species", "no"]]
    both = model.predict(pairs, ["relevance", "stance"])
    rel, st = both["relevance"], both["stance"]
    assert rel.shape == st.shape == (2,) and np.all((rel > 0) & (rel < 1))
    np.testing.assert_allclose(
        model.predict(pairs[1:], ["relevance"])["relevance"], rel[1:], atol=1e-5
    )
    np.testing.assert_allclose(model.predict(pairs, ["stance"])["stance"], st, atol=1e-5)
    eq = model.predict([pair_for("equivalence", "c", "a", "b")], ["equivalence"])["equivalence"]
    assert eq.shape == (1,)
    ev = [pair_for("evidence", "c", "p", x) for x in ["para one", "para two"]]
    assert model.predict(ev, ["evidence"])["evidence"].shape == (2,)
    assert pair_for("evidence", "c", "p", "x") == ("c [SEP] p", "x")
    assert pair_for("equivalence", "c", "a", "b") == ("c", "a [SEP] b")


def test_load_refuses_missing_or_incompatible(tiny_base, tmp_path):
    with pytest.raises(ModelError, match=r"manifest\.json missing"):
        PairModel.load(tmp_path / "nothing")
    model = PairModel.from_base(tiny_base, tasks=["relevance"])
    model.save(tmp_path / "m")
    with pytest.raises(ModelError, match="not trained for stance"):
        PairModel.load(tmp_path / "m", tasks=["stance"])
    mp = tmp_path / "m" / "manifest.json"
    mp.write_text(json.dumps({**json.loads(mp.read_text()), "format": "other/9"}))
    with pytest.raises(ModelError, match=r"manifest\.json is corrupted"):
        PairModel.load(tmp_path / "m")  # an edited file is caught by its checksum first
    restamp_bundle(tmp_path / "m")  # a well-formed bundle of another format
    with pytest.raises(ModelError, match="other/9"):
        PairModel.load(tmp_path / "m")
    model.save(tmp_path / "m2")
    (tmp_path / "m2" / "heads.safetensors").unlink()
    with pytest.raises(ModelError, match=r"heads\.safetensors is missing"):
        PairModel.load(tmp_path / "m2")
    shutil.rmtree(tmp_path / "m2")


def test_platt_recovers_known_scaling():
    rng = np.random.default_rng(0)
    z = rng.normal(size=4000) * 3
    y = (rng.random(4000) < 1 / (1 + np.exp(-(0.5 * z - 1.0)))).astype(float)
    c = fit_platt(z, y)
    assert c["a"] == pytest.approx(0.5, abs=0.1) and c["b"] == pytest.approx(-1.0, abs=0.15)
    assert fit_platt(z, np.ones_like(z)) == {"a": 1.0, "b": 0.0}


def test_length_bucketing_covers_everything_and_groups_lengths():
    ex = [Example("stance", "x" * n, "y", 1.0) for n in range(1, 201)]
    batches = length_bucketed_batches(ex, 10, random.Random(1))
    assert sorted(len(e.a) for b in batches for e in b) == list(range(1, 201))
    spread = max(max(len(e.a) for e in b) - min(len(e.a) for e in b) for b in batches)
    assert spread <= 10


def test_onnx_runtime_scores_like_torch_and_never_serves_stale_weights(tiny_pair_model, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_pair_model, folder, ignore=shutil.ignore_patterns("onnx"))
    model = PairModel.load(folder)
    pairs = [
        pair_for("relevance", "a claim about zoos", f"perspective number {i}") for i in range(5)
    ]
    pairs.append(pair_for("relevance", "short", "one"))  # a batch of one, other length
    ref = model.predict(pairs, ["relevance", "stance"])
    fast = model.for_inference()
    assert fast._onnx is not None and (folder / "onnx" / "pair.onnx").is_file()
    got = fast.predict(pairs, ["relevance", "stance"], batch_size=5)
    for t in ("relevance", "stance"):
        assert np.allclose(got[t], ref[t], atol=1e-5)
    # a save that keeps the weights keeps the graph (content stamp): no second export
    built = (folder / "onnx" / "pair.onnx").stat().st_mtime_ns
    model.save(folder)
    assert PairModel.load(folder).for_inference()._onnx is not None
    assert (folder / "onnx" / "pair.onnx").stat().st_mtime_ns == built
    # weights changed in memory (training) differ from the folder's: PyTorch, not the old graph
    with torch.no_grad():
        model.net.heads["relevance"].bias.add_(1.0)
    assert model.for_inference() is model


def test_average_is_the_mean_of_the_weights_and_refuses_other_models(tiny_base, tmp_path):
    import subprocess

    from perspect.lab.train.average import average

    from .conftest import perspect_cmd

    a, b = PairModel.from_base(tiny_base), PairModel.from_base(tiny_base)
    with torch.no_grad():
        for p in b.net.parameters():
            p.add_(0.5)
    b.manifest["thresholds"]["stance"] = 0.33
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    r = subprocess.run(
        [*perspect_cmd(), "train", "--task", "average", "--models", str(tmp_path / "a"),
         str(tmp_path / "b"), "--out", str(tmp_path / "avg")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    avg = PairModel.load(tmp_path / "avg")
    for (name, pa), pb, pm in zip(
        a.net.named_parameters(), b.net.parameters(), avg.net.parameters(), strict=True
    ):
        # saved models keep large tensors in float16 (perspect.core.model.bundle)
        assert torch.allclose(pm, (pa + pb) / 2, atol=1e-3), name
    # the last model's decisions come along (to be re-fitted), with where the weights came from
    assert avg.manifest["thresholds"]["stance"] == 0.33
    assert avg.manifest["averaged_from"]["models"] == [str(tmp_path / "a"), str(tmp_path / "b")]
    pairs = [("zoos should be banned", "zoos save species")]
    assert avg.logits(pairs, ["stance"])["stance"].shape == (1,)

    PairModel.from_base(tiny_base, tasks=["relevance"]).save(tmp_path / "c")
    with pytest.raises(ModelError, match="cannot average"):
        average([tmp_path / "a", tmp_path / "c"], tmp_path / "bad")
    with pytest.raises(ModelError, match="at least two"):
        average([tmp_path / "a"], tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
