"""The equivalence cross-encoder: training, its place in the equivalence stack, and the pruning
that keeps a search from scoring pairs that cannot merge."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from perspect.core.datasets.perspectrum import load_claims, load_perspectives
from perspect.core.errors import ModelError
from perspect.core.model.decision_stack import Stack
from perspect.core.model.onnxrt import INT8
from perspect.lab.fitting import recalibrate
from perspect.lab.pools import pool_searcher
from perspect.pipeline.clusters import at_most, both_orders, ce_needed, complete_link
from perspect.pipeline.engine import FAST_EQUIVALENCE_PAIRS, Engine, EngineConfig, fast_config
from perspect.reranker.equivalence_ce import (
    FORMAT,
    MANIFEST,
    EquivalenceModel,
    canonical,
    load_for,
    pair_input,
)
from perspect.reranker.model import PairModel

from .conftest import perspect_cmd, restamp_bundle


@pytest.fixture(scope="module")
def tiny_ce(tiny_perspectrum, tiny_base, tmp_path_factory):
    """`perspect train --task equivalence-ce --profile quick` from the tiny base, through the CLI."""
    out = tmp_path_factory.mktemp("eqce") / "equivalence"
    r = subprocess.run(
        [
            *perspect_cmd(),
            "train",
            "--task",
            "equivalence-ce",
            "--profile",
            "quick",
            "--base",
            tiny_base,
            "--data",
            str(tiny_perspectrum),
            "--out",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "trained the equivalence cross-encoder" in r.stdout
    return out


def test_trains_with_a_manifest_and_scores_pairs_symmetrically(tiny_ce):
    m = json.loads((tiny_ce / MANIFEST).read_text())
    assert m["format"] == FORMAT and m["pairs"]["total"] > 0 and m["training"]["steps"] > 0
    assert {d["file"] for d in m["data"]} >= {"perspectrum_with_answers_v1.0.json"}
    ce = EquivalenceModel.load(tiny_ce)
    claim = "Homework should be banned."
    a, b, c = "Homework causes stress.", "Homework makes kids anxious.", "Practice helps."
    p = ce.predict(claim, [(a, b), (b, a), (a, c)])
    assert p.shape == (3,) and ((p > 0) & (p < 1)).all()
    assert p[0] == p[1]  # one score per pair, whichever way round
    assert canonical(b, a) == canonical(a, b) and ce.predict(claim, []).shape == (0,)
    # the score is the mean of both orders; a one-order model (fits made before) reads only the
    # canonical one
    one = EquivalenceModel.load(tiny_ce, orders=1)
    x, y = canonical(a, b)
    fwd = one.predict(claim, [(a, b)])[0]
    rev = float(ce.model.predict([pair_input(claim, y, x)], show_progress_bar=False)[0])
    assert fwd == pytest.approx(float(ce.model.predict([pair_input(claim, x, y)])[0]), abs=1e-6)
    assert p[0] == pytest.approx((fwd + rev) / 2, abs=1e-6)
    with pytest.raises(ModelError, match="1 or 2 orders"):
        EquivalenceModel(ce.model, m, orders=3)


def test_served_on_onnx_runtime_it_scores_like_the_cross_encoder(tiny_ce, tmp_path):
    folder = tmp_path / "equivalence"
    shutil.copytree(tiny_ce, folder, ignore=shutil.ignore_patterns("onnx"))
    claim = "Homework should be banned."
    pairs = [
        ("Homework causes stress.", "Homework makes kids anxious."),
        ("Practice helps.", "Drills build skill " * 30),  # past max_length: truncated alike
        ("Ça dépend.", "Homework causes stress."),
    ]
    ce = EquivalenceModel.load(folder)
    ref = ce.predict(claim, pairs)
    assert EquivalenceModel.serving(folder) is None  # not exported yet
    fast = ce.for_inference()
    assert fast._onnx is not None and (folder / "onnx" / "equivalence.onnx").is_file()
    served = EquivalenceModel.serving(folder)
    assert served is not None and served.model is None
    for m in (fast, served):
        assert np.allclose(m.predict(claim, pairs), ref, atol=1e-5)
    assert np.allclose(
        served.one_order(claim, pairs, True), ce.one_order(claim, pairs, True), atol=1e-5
    )
    q = served.quantized()  # int8 is PyTorch's: the served model loads the network for it
    assert q.model is not None and q.manifest["quantized"] == "dynamic-int8"
    assert q.for_inference() is q


def test_load_refuses_a_missing_or_foreign_model(tmp_path, tiny_ce):
    with pytest.raises(ModelError, match="no equivalence cross-encoder") as e:
        EquivalenceModel.load(tmp_path)
    assert "perspect train --task equivalence-ce" in e.value.hint
    bad = tmp_path / "other"
    shutil.copytree(tiny_ce, bad)
    m = json.loads((bad / MANIFEST).read_text())
    (bad / MANIFEST).write_text(json.dumps({**m, "format": "perspect.dense/1"}))
    with pytest.raises(ModelError, match="corrupted"):  # an edited bundle file is caught first
        EquivalenceModel.load(bad)
    restamp_bundle(bad)  # a well-formed bundle entry of another kind of model
    with pytest.raises(ModelError, match=r"not 'perspect\.equivalence-ce/1'"):
        EquivalenceModel.load(bad)


def test_pruned_pairs_give_the_same_clusters_as_scoring_all():
    """`ce_needed` skips pairs the cross-encoder cannot lift to the cut; complete-link over the
    pruned scores (skipped pairs get 0) must equal complete-link over every pair's real score."""
    st = Stack(("cosine", "ce"), (5.0, 3.0), -4.0)
    cut = 0.5
    rng = np.random.default_rng(1)
    for _ in range(50):
        n = 9
        iu = np.triu_indices(n, 1)
        feats = {"cosine": rng.uniform(0, 1, len(iu[0]))}
        need = ce_needed(st, feats, cut)
        assert 0 < need.sum() < len(need)
        real = rng.uniform(0, 1, len(iu[0]))
        full, pruned = np.zeros((n, n)), np.zeros((n, n))
        full[iu] = st.prob({**feats, "ce": real})
        pruned[iu] = st.prob({**feats, "ce": np.where(need, real, 0.0)})
        side = rng.uniform(size=n) < 0.5
        a = complete_link(full + full.T, side, cut)
        b = complete_link(pruned + pruned.T, side, cut)
        assert (a[:, None] == a[None, :]).tolist() == (b[:, None] == b[None, :]).tolist()


class _TwoOrders(EquivalenceModel):
    """The real two-order logic over fixed per-order scores (what a trained model would return),
    counting the passes it runs."""

    def __init__(self, fwd: dict, rev: dict):
        super().__init__(None, {}, orders=2)
        self.scores, self.passes = {False: fwd, True: rev}, 0

    def one_order(self, claim, pairs, reverse=False):
        self.passes += len(pairs)
        return np.array([self.scores[reverse][canonical(a, b)] for a, b in pairs])


def test_the_reverse_pass_runs_only_where_it_could_change_a_cluster():
    """Both orders: the reverse pass is skipped for pairs that stay below the cut whatever it
    says; the clusters must equal those of scoring both orders of every pair."""
    st = Stack(("cosine", "ce"), (5.0, 3.0), -4.0)
    cut = 0.5
    rng = np.random.default_rng(2)
    saved = 0
    for _ in range(50):
        n = 9
        iu = np.triu_indices(n, 1)
        texts = [f"perspective {i}" for i in range(n)]
        pairs = [(texts[a], texts[b]) for a, b in zip(*iu, strict=True)]
        fwd = {canonical(*x): v for x, v in zip(pairs, rng.uniform(0, 1, len(pairs)), strict=True)}
        rev = {canonical(*x): v for x, v in zip(pairs, rng.uniform(0, 1, len(pairs)), strict=True)}
        feats = {"cosine": rng.uniform(0, 1, len(pairs))}
        ce = _TwoOrders(fwd, rev)
        got = both_orders(ce, "a claim", pairs, st, feats, cut)
        both = np.array([(fwd[canonical(*x)] + rev[canonical(*x)]) / 2 for x in pairs])
        assert np.allclose(got, both) == (ce.passes == 2 * len(pairs))
        full, pruned = np.zeros((n, n)), np.zeros((n, n))
        full[iu] = st.prob({**feats, "ce": both})
        pruned[iu] = st.prob({**feats, "ce": got})
        side = rng.uniform(size=n) < 0.5
        a = complete_link(full + full.T, side, cut)
        b = complete_link(pruned + pruned.T, side, cut)
        assert (a[:, None] == a[None, :]).tolist() == (b[:, None] == b[None, :]).tolist()
        saved += 2 * len(pairs) - ce.passes
    assert saved > 0  # the reverse pass was skipped somewhere


def test_calibrate_adds_it_to_the_stack_and_the_engine_uses_it(
    tiny_perspectrum, tiny_pair_model, tiny_ce, tmp_path
):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_pair_model, model_dir)
    r = subprocess.run(
        [
            *perspect_cmd(),
            "train",
            "--task",
            "calibrate",
            "--out",
            str(model_dir),
            "--data",
            str(tiny_perspectrum),
            "--equivalence-model",
            str(tiny_ce),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    m = json.loads((model_dir / "manifest.json").read_text())
    assert m["stacks"]["equivalence"]["features"][-1] == "ce"
    assert not m["equivalence_ce"]["path"].startswith("/")  # relative: the folders move together
    assert m["equivalence_ce"]["orders"] == 2
    # a pair model fitted before `orders` existed keeps scoring one order, as its stack was fitted
    old = {"equivalence_ce": {k: v for k, v in m["equivalence_ce"].items() if k != "orders"}}
    assert load_for(old, model_dir).orders == 1 and load_for(m, model_dir).orders == 2

    # a per-search budget of cross-encoder pairs (EngineConfig.equivalence_ce_max_pairs)
    sent: list[int] = []
    capped = Engine.load(
        pool_searcher(tiny_perspectrum, tmp_path / "idx2", retrievers=("bm25", "dense")),
        PairModel.load(model_dir),
        EngineConfig(equivalence_ce_max_pairs=1),
    )
    score = capped.equivalence_ce.one_order
    capped.equivalence_ce.one_order = lambda c, pairs, reverse=False: (
        sent.append(len(pairs)),
        score(c, pairs, reverse),
    )[1]
    capped.search(load_claims(tiny_perspectrum, "dev")[0].text)
    assert sent and max(sent) <= 1

    # past `equivalence_fp32_pairs` pairs a search, the cross-encoder's int8 graph scores the
    # rest: asked for a claim's gold pairs at once, the fp32 graph sees the first pair only
    tiered = Engine.load(
        capped.searcher, PairModel.load(model_dir), EngineConfig(equivalence_fp32_pairs=1)
    )
    overflow = tiered.clusters.overflow
    assert overflow.budget == 1 and not overflow.opened  # opened by the first search past it
    cheap = overflow.model()
    assert cheap.manifest["quantized"] == INT8 and cheap._onnx is not None
    seen: dict[str, list[int]] = {"fp32": [], "int8": []}
    for label, ce in (("fp32", tiered.equivalence_ce), ("int8", cheap)):
        ce.one_order = lambda c, pairs, reverse=False, _f=ce.one_order, _s=seen[label]: (
            _s.append(0 if reverse else len(pairs)),
            _f(c, pairs, reverse),
        )[1]
    texts = load_perspectives(tiny_perspectrum)
    claim = max(load_claims(tiny_perspectrum, "dev"), key=lambda c: len(c.pids))
    ids = [str(p) for p in claim.pids if p in texts]
    query, sides = tiered.retrieve.query(claim.text), np.full(len(ids), 0.5)
    probs = tiered.clusters.equivalence(query, ids, [texts[int(i)] for i in ids], sides)
    assert sum(seen["fp32"]) == 1 and sum(seen["int8"]) >= 1, seen
    # scored whole by the fp32 graph: the same probabilities, to int8's hundredths
    whole = Engine.load(
        capped.searcher, PairModel.load(model_dir), EngineConfig(equivalence_fp32_pairs=None)
    )
    alone = whole.clusters.equivalence(query, ids, [texts[int(i)] for i in ids], sides)
    np.testing.assert_allclose(probs, alone, atol=0.05)  # int8 moves a score by hundredths

    # the cascade's gate (EngineConfig.equivalence_ask_floor): a pair whose stacked probability
    # at the cross-encoder's best score stays under the floor is never asked and counts as its
    # lowest score; the pairs over it are scored as without the gate
    pair_texts = [texts[int(i)] for i in ids]
    st, cut = whole.decisions.stack("equivalence"), whole.clusters.cluster_cut()
    iu = np.triu_indices(len(ids), 1)
    feats = whole.clusters.base_features(query, ids, pair_texts, sides, iu)
    hi = st.prob({**feats, "ce": np.ones(len(iu[0]))})
    at_lo = st.prob({**feats, "ce": np.zeros(len(iu[0]))})
    asked = hi >= cut
    assert asked.sum() >= 2, "the claim needs pairs the cross-encoder decides"
    floor = float(np.median(hi[asked]))
    assert capped.clusters.ask_floor is None  # this model fitted none: no gate by default
    for gate, want_asked in ((0.0, asked), (floor, hi >= floor), (1.01, np.zeros_like(asked))):
        gated = Engine.load(
            capped.searcher,
            PairModel.load(model_dir),
            EngineConfig(equivalence_fp32_pairs=None, equivalence_ask_floor=gate),
        )
        sent.clear()
        gated.equivalence_ce.one_order = (
            lambda c, pairs, reverse=False, _f=(gated.equivalence_ce.one_order): (
                sent.append(0 if reverse else len(pairs)),
                _f(c, pairs, reverse),
            )[1]
        )
        got = gated.clusters.equivalence(query, ids, pair_texts, sides)[iu]
        assert sum(sent) == int(want_asked.sum()), (gate, sent)
        np.testing.assert_allclose(got[want_asked], alone[iu][want_asked], atol=1e-6)
        np.testing.assert_allclose(got[~want_asked], at_lo[~want_asked], atol=1e-6)
    assert gated.search(claim.text).claim  # nothing asked at all: a search still answers
    # no budget: one model; an int8 cross-encoder has no cheaper copy to hand over to
    assert (
        Engine.load(
            capped.searcher, PairModel.load(model_dir), EngineConfig(equivalence_fp32_pairs=None)
        ).clusters.overflow
        is None
    )
    assert (
        Engine.load(capped.searcher, PairModel.load(model_dir), fast_config()).clusters.overflow
        is None
    )

    # the fast preset: both cross-encoders int8 (ONNX Runtime's copies of their graphs: the
    # fp32 graphs stay), budget kept
    fast = Engine.load(capped.searcher, PairModel.load(model_dir), fast_config())
    assert fast.config.equivalence_ce_max_pairs == FAST_EQUIVALENCE_PAIRS
    assert fast.model.manifest["quantized"] == fast.equivalence_ce.manifest["quantized"] == INT8
    assert fast.model._onnx is not None and fast.equivalence_ce._onnx is not None
    # the default runtime serves the fp32 cross-encoder's exported graph (ONNX Runtime)
    assert (
        capped.equivalence_ce._onnx is not None
        and "quantized" not in capped.equivalence_ce.manifest
    )
    mixed = Engine.load(
        capped.searcher,
        PairModel.load(model_dir),
        EngineConfig(quantize=True, quantize_equivalence=False),
    )
    assert mixed.model.manifest["quantized"] == INT8
    assert "quantized" not in mixed.equivalence_ce.manifest

    # PyTorch's runtime quantizes with PyTorch (copies: the fp32 modules are untouched)
    def int8(module) -> bool:
        return any("quantized" in type(x).__module__ for x in module.modules())

    on_torch = Engine.load(capped.searcher, PairModel.load(model_dir), fast_config(runtime="torch"))
    assert int8(on_torch.equivalence_ce.model.model) and int8(on_torch.model.net)
    plain = Engine.load(capped.searcher, PairModel.load(model_dir), EngineConfig(runtime="torch"))
    assert not int8(plain.model.net) and not int8(plain.equivalence_ce.model.model)
    got = fast.equivalence_ce.predict("a claim", [("one view", "another view")])
    assert got.shape == (1,) and 0.0 <= got[0] <= 1.0
    assert fast.search(load_claims(tiny_perspectrum, "dev")[0].text).claim

    # re-fitting without the flag keeps the cross-encoder; "none" drops it from the stack
    kept = recalibrate(model_dir, tiny_perspectrum).manifest
    assert kept["equivalence_ce"] == m["equivalence_ce"]
    assert kept["stacks"]["equivalence"]["features"][-1] == "ce"

    searcher = pool_searcher(tiny_perspectrum, tmp_path / "idx", retrievers=("bm25", "dense"))
    model = PairModel.load(model_dir)
    engine = Engine.load(searcher, model)
    assert engine.equivalence_ce is not None
    claim = load_claims(tiny_perspectrum, "dev")[0].text
    res = engine.search(claim)
    assert res.clusters and "equivalence" in res.timings_ms

    # a cross-encoder retrained after the fit is refused, with the command that re-fits
    cm = json.loads((tiny_ce / MANIFEST).read_text())
    m["equivalence_ce"]["created_at"] = "an earlier training"
    model.manifest = m
    with pytest.raises(ModelError, match="retrained after") as e:
        Engine.load(searcher, model)
    assert "--task calibrate --equivalence-model" in e.value.hint
    # a stack that reads the cross-encoder without one named is refused too
    m.pop("equivalence_ce")
    with pytest.raises(ModelError, match="does not name"):
        Engine.load(searcher, model)
    assert cm["format"] == FORMAT
    searcher.close()
    dropped = recalibrate(model_dir, tiny_perspectrum, equivalence_model="none").manifest
    assert (
        "equivalence_ce" not in dropped and "ce" not in dropped["stacks"]["equivalence"]["features"]
    )


def test_the_pair_budget_keeps_the_pairs_most_likely_to_merge():
    st = Stack(("cosine", "ce"), (5.0, 3.0), -4.0)
    feats = {"cosine": np.array([0.9, 0.2, 0.8, 0.5, 0.95])}
    need = np.array([True, False, True, True, True])
    assert at_most(need, st, feats, None).tolist() == need.tolist()
    assert at_most(need, st, feats, 2).tolist() == [True, False, False, False, True]
    assert at_most(need, st, feats, 10).tolist() == need.tolist()
