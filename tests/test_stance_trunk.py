"""The stance trunk on a tiny decomposed MPNet the tests make: its saved format, scoring from
stored int8 states vs states computed on the spot, the index's states through a sequence of
writes, and damaged entries."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from .conftest import PERSPECTIVES, write_json

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


@pytest.fixture(scope="module")
def tiny_trunk(tmp_path_factory) -> Path:
    """A 4-layer, 32-wide MPNet with the packaged mpnet tokenizer, LoRA (random B) on its top
    2 layers and a stance head, saved by the trainer's own `save` and packed as a bundle entry."""
    from peft import get_peft_model
    from transformers import AutoTokenizer, MPNetConfig, MPNetModel

    from perspect.core import paths
    from perspect.lab.train import stance_trunk as trainer
    from perspect.reranker import stance_net

    root = tmp_path_factory.mktemp("trunk")
    base = root / "base"
    tok = AutoTokenizer.from_pretrained(paths.resolve_base("mpnet"))
    torch.manual_seed(0)
    cfg = MPNetConfig(
        vocab_size=tok.vocab_size + 1,
        hidden_size=32,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=64,
    )
    MPNetModel(cfg, add_pooling_layer=False).save_pretrained(base)
    real = Path(paths.resolve_base("mpnet"))
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy(real / f, base / f)  # the packaged base's own tokenizer files
    _, enc = stance_net.load_base(str(base))
    peft_model = get_peft_model(enc, stance_net.lora_config(4, 2, rank=4, alpha=8))
    for n, p in peft_model.named_parameters():
        if "lora_B" in n:
            p.data.normal_(0, 0.5)
    net = stance_net.DecomposedNet(enc, 2, {"stance": 1})
    net.heads["stance"].weight.data.normal_(0, 1.0)
    data = root / "data"
    data.mkdir()
    for name in ("perspectrum_with_answers_v1.0.json", "dataset_split_v1.0.json"):
        write_json(data / name, [])
    write_json(data / "perspective_pool_v1.0.json", PERSPECTIVES)
    args = argparse.Namespace(
        top=2, rank=4, alpha=8, data=data, vitaminc=0, vitaminc_file=None, base=str(base)
    )
    dev = {"auroc": 50.0}
    res = {"cut": 0.5, "dev": dev, "dev_int8_states": dev}
    trainer.save(root / "full", peft_model, net, res, str(base), args)
    trainer.pack(root / "full", root / "stance")
    return root / "stance"


def test_quantized_states_round_trip_within_half_a_step():
    from perspect.core.index.stance_states import dequantize, quantize

    x = np.random.default_rng(0).normal(size=(7, 32)).astype(np.float32)
    x[3] = 0.0
    q, scale = quantize(x)
    assert q.dtype == np.int8 and scale.shape == (7,)
    err = np.abs(dequantize(q, scale) - x)
    assert (err <= scale[:, None] / 2 + 1e-6).all() and not dequantize(q, scale)[3].any()


def test_a_packed_trunk_loads_once_and_scores_the_same_stored_or_computed(tiny_trunk):
    from perspect.core.index.stance_states import dequantize, quantize
    from perspect.core.model.bundle import BundleEntry, verify
    from perspect.reranker.stance_trunk import StanceTrunk

    entry = BundleEntry.read(tiny_trunk)
    assert entry.role == "stance" and verify(entry) == []
    assert {Path(f).name for f in entry.files} >= {"adapter_model.safetensors", "heads.safetensors"}
    trunk = StanceTrunk.load(tiny_trunk)
    assert StanceTrunk.load(tiny_trunk) is trunk  # once per process
    texts = [p["text"] for p in PERSPECTIVES]
    claim = "Animals should have lawful rights."
    states = trunk.lower(texts)
    assert [s.shape[1] for s in states] == [32] * len(texts)
    assert all(len(s) <= trunk.max_length for s in states)
    p = trunk.support(claim, states)
    assert p.shape == (len(texts),) and ((p > 0) & (p < 1)).all() and p.std() > 1e-3
    # one at a time, in another order, or from int8 states: the same scores
    alone = [trunk.support(claim, [s])[0] for s in states[::-1]][::-1]
    np.testing.assert_allclose(alone, p, atol=2e-2)
    stored = [dequantize(*quantize(s)) for s in states]
    np.testing.assert_allclose(trunk.support(claim, stored), p, atol=3e-2)
    np.testing.assert_allclose(trunk.predict(claim, texts), p, atol=1e-6)
    # the claim matters: a negated claim moves the scores
    assert np.abs(trunk.support("Animals should not have rights.", states) - p).max() > 1e-3


def test_the_served_trunk_scores_as_pytorch_without_torch(tiny_trunk, tmp_path):
    """Its two ONNX graphs (exported at the first serving load) give PyTorch's scores; a new
    process then serves them without importing torch or transformers."""
    import subprocess
    import sys

    from perspect.reranker.stance_trunk import StanceTrunk

    entry = tmp_path / "stance"
    shutil.copytree(tiny_trunk, entry)
    torch_trunk = StanceTrunk.load(entry)
    served = StanceTrunk.load(entry, serving=True)
    assert served.served and not torch_trunk.served
    texts = [p["text"] for p in PERSPECTIVES]
    claim = "Animals should have lawful rights."
    for a, b in zip(served.lower(texts), torch_trunk.lower(texts), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=0.1 * np.abs(b).max())
    np.testing.assert_allclose(
        served.predict(claim, texts), torch_trunk.predict(claim, texts), atol=2e-2
    )
    int8 = StanceTrunk.load(entry, serving=True, int8=True)  # --fast: the top graph in int8
    assert int8.served and int8 is not served
    assert (entry / "onnx" / "trunk_top.int8.onnx").is_file()
    np.testing.assert_allclose(int8.predict(claim, texts), served.predict(claim, texts), atol=0.1)
    code = (
        "import sys; from perspect.reranker.stance_trunk import StanceTrunk; "
        f"t = StanceTrunk.load({str(entry)!r}, serving=True); "
        f"p = t.predict('a claim', ['one view', 'another view']); "
        "assert t.served and len(p) == 2; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'imported'"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_served_trunks_on_one_base_share_one_lower_graph(tiny_trunk, tmp_path, monkeypatch):
    """Two trunks whose lower layers are the same frozen base (a search serves the relation and
    the argument model) open the lower graph once: one session, the same states, each its own
    top graph."""
    from perspect.reranker import stance_trunk
    from perspect.reranker.stance_trunk import StanceTrunk

    entries = [tmp_path / "a", tmp_path / "b"]
    for e in entries:
        shutil.copytree(tiny_trunk, e)
        assert StanceTrunk.load(e, serving=True).served  # graphs exported for each
    monkeypatch.setattr(stance_trunk, "_LOADED", {})  # a new process: graphs already made
    monkeypatch.setattr(stance_trunk, "_LOWER", {})
    a, b = (StanceTrunk.load(e, serving=True) for e in entries)
    assert a is not b and a.states_key == b.states_key
    assert a._onnx[0] is b._onnx[0] and a._onnx[1] is not b._onnx[1]
    texts = [p["text"] for p in PERSPECTIVES]
    for x, y in zip(a.lower(texts), StanceTrunk.load(entries[0]).lower(texts), strict=True):
        np.testing.assert_allclose(x, y, atol=0.1 * np.abs(y).max())
    # loaded at once, as reranker.factory.load opens a search's models: still one lower session
    from concurrent.futures import ThreadPoolExecutor

    from perspect.core.model import onnxrt

    monkeypatch.setattr(stance_trunk, "_LOADED", {})
    monkeypatch.setattr(stance_trunk, "_LOWER", {})
    monkeypatch.setattr(onnxrt, "_SESSIONS", {})
    opened = []
    real = onnxrt._open
    monkeypatch.setattr(onnxrt, "_open", lambda *a: (opened.append(a[1].name), real(*a))[1])
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda e: StanceTrunk.load(e, serving=True), entries * 2))
    assert len({id(g._onnx[0]) for g in got}) == 1
    assert sorted(opened) == ["trunk_lower.onnx", "trunk_top.onnx", "trunk_top.onnx"], opened


def test_a_damaged_trunk_is_one_clear_error(tiny_trunk, tmp_path):
    from perspect.core.errors import ModelError
    from perspect.reranker.stance_trunk import StanceTrunk

    broken = tmp_path / "stance"
    shutil.copytree(tiny_trunk, broken)
    heads = broken / "heads.safetensors"
    heads.write_bytes(heads.read_bytes()[:100])
    with pytest.raises(ModelError, match=r"corrupted|sha256|checksum"):
        StanceTrunk.load(broken)
    (broken / "bundle.json").unlink()
    other = tmp_path / "plain"
    shutil.copytree(broken, other)
    (other / "manifest.json").write_text(json.dumps({"format": "something/else"}))
    with pytest.raises(ModelError, match=r"not 'perspect\.stancetrunk/1'"):
        StanceTrunk.load(other)


def test_the_index_keeps_states_through_builds_adds_and_deletes(
    tiny_trunk, pools, home, tmp_path, monkeypatch
):
    from perspect.core.index.config import IndexConfig
    from perspect.indexer.indexer import Indexer, Source
    from perspect.pipeline.stance import StanceScorer
    from perspect.reranker import stance_trunk
    from perspect.reranker.stance_trunk import StanceTrunk
    from perspect.retriever.searcher import Searcher

    monkeypatch.setattr(stance_trunk, "bundled", lambda: tiny_trunk)
    trunk = StanceTrunk.load(tiny_trunk)
    ix = Indexer("s", home=home, config=IndexConfig(stance_states=True))
    ix.build([Source("perspectives", pools["perspectives"])])

    def stored() -> dict:
        s = Searcher("s", home=home)
        try:
            st = s.stance_states()
            assert st is not None and st.key == trunk.states_key
            return {k: v[0].copy() for k, v in st.get_many([str(i) for i in range(1, 20)]).items()}
        finally:
            s.close()

    assert sorted(stored()) == sorted(str(p["pId"]) for p in PERSPECTIVES)
    more = write_json(tmp_path / "more.json", [{"pId": 7, "text": "Pets are family members."}])
    ix.add([Source("perspectives", more)])
    ix.add([Source("perspectives", more)])  # replaced by id, not doubled
    got = stored()
    assert "7" in got and len(got) == len(PERSPECTIVES) + 1
    ix.delete("perspectives", ["2", "7"])
    assert sorted(stored()) == sorted(str(p["pId"]) for p in PERSPECTIVES if p["pId"] != 2)

    # a search reads stored states: the trunk's lower layers run for the claim alone
    s = Searcher("s", home=home)
    support = StanceScorer(None, trunk, s)
    calls: list[int] = []
    real = trunk.lower
    monkeypatch.setattr(trunk, "lower", lambda texts, **kw: calls.append(len(texts)) or real(texts))
    ids = ["1", "3", "5"]
    texts = [p["text"] for p in PERSPECTIVES if str(p["pId"]) in ids]
    manifest = {"stance_trunk": {"calibration": {"a": 1.0, "b": 0.0}}}
    support.model = argparse.Namespace(manifest=manifest)
    # a claim no other test reads: the trunk (loaded once a process) keeps recent claims' states
    claim = "Animals should have rights, says this test."
    from_index = support(claim, texts, ids)
    assert calls == [1]
    on_the_spot = support(claim, texts)  # no ids: computed
    assert calls == [1, 3]  # the perspectives' states; the claim's are kept from the first call
    np.testing.assert_allclose(from_index, on_the_spot, atol=3e-2)
    s.close()

    # an index built without states (the default) answers the same, computing them at first
    # touch and keeping them with the index: a new scorer (a new process) computes none, and
    # neither after an add and a rebuild
    plain_ix = Indexer("plain", home=home)
    plain_ix.build([Source("perspectives", pools["perspectives"])])
    s = Searcher("plain", home=home)
    assert s.stance_states() is None
    plain = StanceScorer(argparse.Namespace(manifest=manifest), trunk, s)
    calls.clear()
    np.testing.assert_allclose(plain(claim, texts, ids), on_the_spot)
    assert calls == [3] and plain.lower.computed == 3
    s.close()
    plain_ix.add([Source("perspectives", more)])
    plain_ix.rebuild("bm25")
    s = Searcher("plain", home=home)
    calls.clear()
    again = StanceScorer(argparse.Namespace(manifest=manifest), trunk, s)
    np.testing.assert_allclose(again(claim, texts, ids), on_the_spot)
    assert calls == [] and again.lower.computed == 0
    s.close()
    # ... until `perspect index rebuild --retriever stance` stores them
    Indexer("plain", home=home).store_stance_states()
    s = Searcher("plain", home=home)
    assert s.stance_states().count() == len(PERSPECTIVES) + 1  # and the one added
    calls.clear()
    restored = StanceScorer(argparse.Namespace(manifest=manifest), trunk, s)
    np.testing.assert_allclose(restored(claim, texts, ids), from_index)
    assert calls == []  # the perspectives' states read from the index, the claim's kept
    s.close()


def _pair_with_trunk(tiny_pair_model: Path, tiny_trunk: Path, tmp_path: Path):
    """A copy of the tiny pair model naming the tiny trunk, saved and loaded back."""
    from perspect.reranker import stance_trunk
    from perspect.reranker.model import PairModel

    folder = tmp_path / "pair"
    shutil.copytree(tiny_pair_model, folder)
    model = PairModel.load(folder)
    stance_trunk.attach(model.manifest, folder, tiny_trunk)
    model.save(folder)
    return PairModel.load(folder)


def test_a_stacked_decision_reads_the_trunk_and_the_pair_head(
    tiny_trunk, tiny_pair_model, tmp_path
):
    """The fitted stance decision stacks the trunk's logit with the pair head's: fitted on gold
    perspectives, it is what a search computes, with the head given (a search has it) or not."""
    from perspect.core.datasets.perspectrum import Claim, Cluster
    from perspect.core.errors import PerspectError
    from perspect.lab.fitting import fit_stance_stack
    from perspect.pipeline.stance import StanceScorer
    from perspect.reranker import stance_trunk

    model = _pair_with_trunk(tiny_pair_model, tiny_trunk, tmp_path)
    texts = {p["pId"]: p["text"] for p in PERSPECTIVES}
    claims = [
        Claim(1, "School uniforms should be required.", "train",
              (Cluster((3,), "SUPPORT", ()), Cluster((5,), "UNDERMINE", ()))),
        Claim(2, "Animals should have lawful rights.", "train",
              (Cluster((1,), "SUPPORT", ()), Cluster((6,), "UNDERMINE", ()))),
    ]  # fmt: skip
    fit = fit_stance_stack(model, claims, texts)
    assert set(fit) == {"a", "b", "head"} and all(np.isfinite(list(fit.values())))
    model.manifest["stance_trunk"]["calibration"] = fit
    support = StanceScorer(model, stance_trunk.load_for(model.manifest, model.origin))
    claim, some = claims[0].text, [texts[3], texts[5], texts[2]]
    raw, head = support.raw(claim, some), support.head(claim, some)
    z = fit["a"] * np.log(raw / (1 - raw)) + fit["b"] + fit["head"] * np.log(head / (1 - head))
    np.testing.assert_allclose(support(claim, some), 1 / (1 + np.exp(-z)), atol=1e-6)
    np.testing.assert_allclose(support(claim, some, head=head), support(claim, some), atol=1e-9)
    with pytest.raises(ValueError, match="head"):
        stance_trunk.calibrated(model.manifest, raw)
    # one-sided gold cannot fit a decision: one clear error
    one_sided = [Claim(3, "Uniforms help.", "train", (Cluster((3,), "SUPPORT", ()),))]
    with pytest.raises(PerspectError, match="supporting and opposing"):
        fit_stance_stack(model, one_sided, texts)


def test_recalibrate_with_a_trunk_fits_the_stack_and_keeps_it(
    tiny_trunk, tiny_pair_model, tiny_perspectrum, tmp_path
):
    """`perspect train --task calibrate --stance-model`: the stance decision becomes the stack
    (fitted before the tune pass), which the later Platt fits leave alone; the pair head's own
    stance calibration stays the identity the stack was fitted over."""
    from perspect.lab.fitting import recalibrate

    folder = tmp_path / "pair"
    shutil.copytree(tiny_pair_model, folder)
    m = recalibrate(
        folder, tiny_perspectrum, retrievers=("bm25", "dense"), stance_model=tiny_trunk
    ).manifest
    fit = m["stance_trunk"]["calibration"]
    assert set(fit) == {"a", "b", "head"} and all(np.isfinite(list(fit.values())))
    assert m["calibration"]["stance"] == {"a": 1.0, "b": 0.0}
    assert "T2" in m["tune_metrics"]
    again = recalibrate(folder, tiny_perspectrum, retrievers=("bm25", "dense")).manifest
    assert again["stance_trunk"]["calibration"] == fit  # kept trunk, same data: the same stack


def test_a_claim_with_a_second_reading_mixes_it_in_at_the_fitted_weight(
    tiny_trunk, tiny_pair_model, tmp_path
):
    """P(support) of "X should be banned" is the fitted mix of the claim's own reading and
    "X is good" read the other way round (pipeline.valence); the weight is fitted on gold
    perspectives of claims that have a second reading, and a claim without one is unchanged."""
    from perspect.core.datasets.perspectrum import Claim, Cluster
    from perspect.lab.fitting import VALENCE_WEIGHTS, fit_stance_decision
    from perspect.pipeline.stance import StanceScorer
    from perspect.reranker import stance_trunk

    model = _pair_with_trunk(tiny_pair_model, tiny_trunk, tmp_path)
    texts = {p["pId"]: p["text"] for p in PERSPECTIVES}
    claims = [
        Claim(1, "School uniforms should be banned.", "train",
              (Cluster((5,), "SUPPORT", ()), Cluster((3,), "UNDERMINE", ()))),
        Claim(2, "Animals should have lawful rights.", "train",
              (Cluster((1,), "SUPPORT", ()), Cluster((6,), "UNDERMINE", ()))),
    ]  # fmt: skip
    fit_stance_decision(model, claims, texts)
    fitted = model.manifest["stance_trunk"]["valence"]
    assert fitted["weight"] in VALENCE_WEIGHTS and (fitted["claims"], fitted["pairs"]) == (1, 2)
    assert set(fitted["tune_auroc"]) == {str(w) for w in VALENCE_WEIGHTS}

    trunk = stance_trunk.load_for(model.manifest, model.origin)
    some = [texts[3], texts[5], texts[2]]
    model.manifest["stance_trunk"]["valence"] = {"weight": 0.0}
    own = StanceScorer(model, trunk)("School uniforms should be banned.", some)
    second = StanceScorer(model, trunk)("School uniforms are good", some)
    plain = StanceScorer(model, trunk)(claims[1].text, some)
    model.manifest["stance_trunk"]["valence"] = {"weight": 0.4}
    mixed = StanceScorer(model, trunk)("School uniforms should be banned.", some)
    np.testing.assert_allclose(mixed, 0.6 * own + 0.4 * (1 - second), atol=1e-6)
    np.testing.assert_allclose(StanceScorer(model, trunk)(claims[1].text, some), plain)
    # the mining stage's entry point, from the trunk's P(support) it already has: the same
    raw = trunk.support(
        "School uniforms should be banned.", StanceScorer(model, trunk).states(some)
    )
    from_trunk = StanceScorer(model, trunk).from_trunk(
        "School uniforms should be banned.", some, raw
    )
    np.testing.assert_allclose(from_trunk, mixed, atol=1e-6)
    del model.manifest["stance_trunk"]["valence"]  # a bundle fitted before it: one reading
    np.testing.assert_allclose(
        StanceScorer(model, trunk)("School uniforms should be banned.", some), own
    )


def test_bf16_only_where_the_cpu_computes_it(tiny_trunk, monkeypatch):
    """The PyTorch path runs bf16 only on CPUs with bf16 units (5.5x slower than float32 on an
    AVX2-only CPU); either way the lower states agree to within bf16's rounding."""
    from perspect.core.model import precision
    from perspect.reranker.stance_trunk import StanceTrunk

    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    monkeypatch.delenv("PERSPECT_BF16", raising=False)
    precision.cpu_has_bf16.cache_clear()
    assert precision.cpu_has_bf16() == ("avx512_bf16" in flags or "amx_bf16" in flags)
    trunk = StanceTrunk.load(tiny_trunk)
    texts = [p["text"] for p in PERSPECTIVES]
    got = {}
    for forced in ("0", "1"):
        monkeypatch.setenv("PERSPECT_BF16", forced)
        precision.cpu_has_bf16.cache_clear()
        assert precision.cpu_autocast().fast_dtype == torch.bfloat16
        assert precision.cpu_autocast()._enabled == (forced == "1")
        got[forced] = trunk.lower(texts)
    precision.cpu_has_bf16.cache_clear()
    for a, b in zip(got["0"], got["1"], strict=True):
        np.testing.assert_allclose(a, b, atol=0.05 * np.abs(a).max())


def test_pairs_judged_once_are_read_back_not_passed_again(tiny_trunk, monkeypatch):
    """One trunk, two questions of the same pairs (a search's sides, then whether each takes a
    side at all): the second reads every head from the trunk's memo, no second top pass; a new
    pair still runs, and the scores are the same either way."""
    from perspect.reranker.stance_trunk import StanceTrunk

    trunk = StanceTrunk.load(tiny_trunk)
    assert StanceTrunk.load(Path(str(tiny_trunk) + "/../" + tiny_trunk.name)) is trunk
    texts = [p["text"] for p in PERSPECTIVES]
    states = trunk.lower(texts)
    claim = trunk.claim_lower("Zoos should be closed, a memo test")
    first = trunk.every_head([claim] * len(states), states)
    passes = []
    real_top = trunk._top
    monkeypatch.setattr(
        trunk, "_top", lambda seqs, batch=64: passes.append(len(seqs)) or real_top(seqs, batch)
    )
    again = trunk.every_head([claim] * len(states), [s.copy() for s in states])
    assert passes == []
    np.testing.assert_array_equal(again["stance"], first["stance"])
    other = trunk.claim_lower("Zoos should stay open, a memo test")
    trunk.every_head([other, claim], [states[0], states[1]])
    assert passes == [1]  # only the new pair


def test_the_claims_negation_is_read_the_other_way_round_at_the_fitted_weight(
    tiny_trunk, tiny_pair_model, tmp_path
):
    """P(support) mixes in 1 - P(support) of the claim's negation by rule at the weight fitted on
    gold perspectives (one of NEGATION_WEIGHTS, the tune AUROC of each kept); weight 0, or a
    bundle fitted before it, reads the claim alone."""
    from perspect.core.datasets.negation import negate
    from perspect.core.datasets.perspectrum import Claim, Cluster
    from perspect.lab.fitting import NEGATION_WEIGHTS, fit_negation
    from perspect.pipeline.stance import StanceScorer
    from perspect.reranker import stance_trunk

    model = _pair_with_trunk(tiny_pair_model, tiny_trunk, tmp_path)
    texts = {p["pId"]: p["text"] for p in PERSPECTIVES}
    claims = [
        Claim(2, "Animals should have lawful rights.", "train",
              (Cluster((1,), "SUPPORT", ()), Cluster((6,), "UNDERMINE", ()))),
        Claim(1, "School uniforms should be required.", "train",
              (Cluster((3,), "SUPPORT", ()), Cluster((5,), "UNDERMINE", ()))),
    ]  # fmt: skip
    trunk = stance_trunk.load_for(model.manifest, model.origin)
    fitted = fit_negation(model, trunk, claims, texts)
    assert fitted["weight"] in NEGATION_WEIGHTS and fitted["pairs"] == 4
    assert set(fitted["tune_auroc"]) == {str(w) for w in NEGATION_WEIGHTS}
    assert "negation" not in model.manifest["stance_trunk"]  # fitting leaves no weight behind

    claim, some = claims[0].text, [texts[1], texts[6], texts[2]]
    own = StanceScorer(model, trunk)(claim, some)
    denial = StanceScorer(model, trunk)(negate(claim), some)
    model.manifest["stance_trunk"]["negation"] = {"weight": 0.3}
    mixed = StanceScorer(model, trunk)(claim, some)
    np.testing.assert_allclose(mixed, 0.7 * own + 0.3 * (1 - denial), atol=1e-6)
    model.manifest["stance_trunk"]["negation"] = {"weight": 0.0}
    np.testing.assert_allclose(StanceScorer(model, trunk)(claim, some), own)


def test_lower_states_are_paid_once_kept_by_text_and_filled_while_idle(tiny_trunk, tmp_path):
    """pipeline.lower: a text's states are computed once and kept in the index's folder by
    text; a damaged store is read as empty (computed again, nothing raised); `fill` computes only
    what is missing, waits while a search is in flight, and stops when cancelled."""
    import threading
    from types import SimpleNamespace

    from perspect.core.index.kept_states import KEPT, KeptStates
    from perspect.pipeline.lower import LowerStates
    from perspect.reranker.stance_trunk import StanceTrunk

    trunk = StanceTrunk.load(tiny_trunk)
    searcher = SimpleNamespace(dir=SimpleNamespace(root=tmp_path), pools={})
    texts = [p["text"] for p in PERSPECTIVES]
    first = LowerStates(trunk, searcher)
    a = first(texts[:3])
    assert first.computed == 3 and KeptStates(tmp_path).count() == 3
    assert first(texts[:3]) and first.computed == 3  # remembered by this process
    second = LowerStates(trunk, searcher)  # another process: read back, the same values
    for x, y in zip(a, second(texts[:3]), strict=True):
        np.testing.assert_array_equal(x, y)
    assert second.computed == 0

    busy = threading.Event()
    cancel = threading.Event()
    busy.set()
    filled: list[int] = []
    filler = threading.Thread(
        target=lambda: filled.append(second.fill(texts, busy.is_set, cancel)), daemon=True
    )
    filler.start()
    filler.join(0.6)
    assert filler.is_alive() and second.computed == 0  # a search in flight: nothing computed
    busy.clear()
    filler.join(30)
    assert filled == [len(texts) - 3] and KeptStates(tmp_path).count() == len(texts)
    assert KeptStates(tmp_path).missing(trunk.states_key, texts) == []
    cancel.set()
    assert LowerStates(trunk, searcher).fill(["A text never seen."], lambda: False, cancel) == 0

    (tmp_path / KEPT).write_bytes(b"not a database")
    third = LowerStates(trunk, searcher)
    for x, y in zip(a, third(texts[:3]), strict=True):
        np.testing.assert_allclose(x, y, atol=1e-6)
    assert third.computed == 3  # computed again; the damaged store left alone
