"""The relation heads fitted onto the argument trunk (perspect.lab.argument_heads): a head is a
linear layer over raw pooled states that gives what the fitted model gives, its shrinkage is
picked on the tune rows (not on the fitting ones), and adding heads leaves the trunk's own heads
and their columns where they were."""

from __future__ import annotations

import json

import numpy as np
from safetensors.numpy import load_file, save_file

from perspect.lab import argument_heads as ah


def _rows(rng, n, shift):
    """Two classes apart along the first axis, with a nuisance axis that flips between topics."""
    y = rng.integers(0, 2, n)
    x = rng.normal(size=(n, 8)) * [1, 1, 5, 5, 5, 5, 5, 5] + 10.0
    x[:, 0] += 1.5 * y
    x[:, 1] += shift * y  # only in the fitting topics
    return x.astype(np.float32), y


def test_a_head_is_a_linear_layer_over_raw_states_picked_on_other_topics():
    rng = np.random.default_rng(0)
    x, y = _rows(rng, 600, 3.0)
    xt, yt = _rows(rng, 400, -3.0)  # the tune topics: the nuisance axis says the opposite
    w, b, info = ah.fit_head(x, y, xt, yt, ah._auroc)
    assert w.shape == (1, 8) and b.shape == (1,)
    # the folded standardisation: P from raw states equals the fitted model's on scaled ones
    from sklearn.linear_model import LogisticRegression

    mu, sd = x.mean(0), x.std(0) + 1e-6
    c, _, weights = info["picked"].removeprefix("C=").partition(", ")
    ref = LogisticRegression(C=float(c), max_iter=3000, class_weight=weights or None)
    ref.fit((x - mu) / sd, y)
    got = ah.probs(w, b, xt)
    assert np.allclose(got, ref.predict_proba((xt - mu) / sd)[:, 1], atol=1e-4)
    # the pick is the tune rows' best, and it is the strongest shrinkage here (the weakest
    # reads the nuisance axis that does not hold on other topics)
    assert info["picked"] == max(info["tune"], key=info["tune"].get)
    assert float(c) <= 0.001, info


def test_added_heads_come_after_the_trunks_own(tmp_path):
    folder = tmp_path / "trained"
    folder.mkdir()
    own = {"stance.weight": np.ones((1, 4), np.float32), "stance.bias": np.zeros(1, np.float32),
           "argument.weight": np.full((3, 4), 2, np.float32),
           "argument.bias": np.zeros(3, np.float32)}  # fmt: skip
    save_file(own, str(folder / "heads.safetensors"))
    (folder / "manifest.json").write_text(json.dumps({"heads": {"stance": 1, "argument": 3}}))
    new = {f"{h}.{p}": np.zeros((n, 4) if p == "weight" else (n,), np.float32)
           for h, n in ah.HEADS.items() for p in ("weight", "bias")}  # fmt: skip
    report = {"argument": {"nli_joint": {"accuracy": 63.0}}}
    ah.add_heads(folder, new, report)
    man = json.loads((folder / "manifest.json").read_text())
    assert list(man["heads"]) == ["stance", "argument", "nli", "equivalence", "claimdiff"]
    assert man["nli_labels"][2] == "contradiction" and man["claimdiff_labels"][1] == "strengthen"
    assert man["dev_metrics"]["relation_heads"] == report["argument"]
    got = load_file(str(folder / "heads.safetensors"))
    assert np.array_equal(got["argument.weight"], own["argument.weight"])
    ah.add_heads(folder, new, report)  # again (a rerun of the step): the same heads, once each
    assert list(json.loads((folder / "manifest.json").read_text())["heads"]) == list(man["heads"])
