"""The serving path: exported graphs on ONNX Runtime with `tokenizers`, no torch or transformers.

What must hold: the same features as transformers' tokenizers, the same scores as the PyTorch
models, and a fresh process that answers a search without importing transformers (the cold start
this path exists for)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from perspect.core.model.tokens import TextTokenizer
from perspect.reranker.model import PairModel

TEXTS_A = [
    "Animals should have lawful rights",
    "A much longer first text that will need cutting because it goes on and on about zoos, "
    "farms, circuses and the law that governs every one of them in detail",
    "Ünïcode café — naïve résumé",
    "short",
]
TEXTS_B = [
    "They feel pain.",
    "one",
    "Another long second text about the same topic that also runs past the limit set here",
    "x " * 40,
]


def test_text_tokenizer_gives_transformers_features(tiny_base):
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(tiny_base)
    tok = TextTokenizer(tiny_base)
    for max_length in (24, 64):
        ref = hf(
            TEXTS_A,
            TEXTS_B,
            truncation="longest_first",
            padding=True,
            max_length=max_length,
            return_offsets_mapping=True,
        )
        got, encs = tok.encode(TEXTS_A, TEXTS_B, max_length)
        for key in ("input_ids", "attention_mask", "token_type_ids"):
            assert got[key].tolist() == ref[key], key
        for row, e in enumerate(encs):  # the comparator reads offsets and sequence ids
            n = len(e.ids)
            assert e.sequence_ids == ref.sequence_ids(row)[:n]
            assert [list(o) for o in e.offsets] == [list(o) for o in ref["offset_mapping"][row][:n]]
    single = hf(TEXTS_A, truncation=True, padding=True, max_length=16)
    assert tok.encode(TEXTS_A, max_length=16)[0]["input_ids"].tolist() == single["input_ids"]
    assert tok.count(TEXTS_A[1]) == len(hf(TEXTS_A[1])["input_ids"])


def test_a_damaged_tokenizer_file_is_one_clear_error(tmp_path):
    from perspect.core.errors import ModelError

    (tmp_path / "tokenizer.json").write_text("{ not json")
    with pytest.raises(ModelError, match="cannot read the tokenizer"):
        TextTokenizer(tmp_path)


def _served_logits(folder, pairs) -> dict:
    """Logits of the serving pair model in a fresh process, and what that process imported."""
    code = (
        "import json, sys\n"
        "from perspect.reranker.model import PairModel\n"
        f"m = PairModel.serving({str(folder)!r})\n"
        f"out = m.logits({pairs!r}, ['relevance', 'stance'], batch_size=3)\n"
        "heavy = sorted({n.split('.')[0] for n in sys.modules} & "
        "{'torch', 'transformers', 'sentence_transformers', 'sklearn'})\n"
        "print(json.dumps({'heavy': heavy, **{k: v.tolist() for k, v in out.items()}}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_serving_pair_model_scores_like_torch_without_importing_it(tiny_pair_model, tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(tiny_pair_model, folder, ignore=shutil.ignore_patterns("onnx"))
    assert PairModel.serving(folder) is None  # nothing exported yet: the caller loads PyTorch
    model = PairModel.load(folder)
    pairs = [*list(zip(TEXTS_A, TEXTS_B, strict=True)), ("a claim", "a perspective")]
    ref = model.logits(pairs, ["relevance", "stance"])
    assert model.for_inference()._onnx is not None  # exports the graph
    got = _served_logits(folder, pairs)
    assert got["heavy"] == []
    for t in ("relevance", "stance"):
        assert np.allclose(got[t], ref[t], atol=1e-5)
    # the optimized copy is saved once and serves the next process the same scores
    assert list((folder / "onnx").glob("pair.opt-*.onnx"))
    again = _served_logits(folder, pairs)
    assert np.allclose(again["relevance"], ref["relevance"], atol=1e-5)
    # new weights: the old graph is not served
    model.manifest["note"] = "retrained"
    import torch

    with torch.no_grad():
        model.net.heads["stance"].bias.add_(1.0)
    model.save(folder)
    assert PairModel.serving(folder) is None


def test_serving_comparator_gives_the_same_relations_and_rationales(tiny_base, tmp_path):
    import torch

    from perspect.reranker.comparator import Comparator

    torch.manual_seed(1)
    out = tmp_path / "comparator"
    Comparator.from_base(tiny_base).save(out)
    loaded = Comparator.load(out)
    pairs = list(zip(TEXTS_A, TEXTS_B, strict=True))
    ref_p, ref_t = loaded.scores(pairs, batch_size=3)
    assert Comparator.serving(out) is None
    fast = loaded.for_inference()
    assert fast._onnx is not None
    served = Comparator.serving(out)
    assert served is not None and served.net is None
    for cmp in (fast, served):
        p, t = cmp.scores(pairs, batch_size=3)
        assert np.allclose(p, ref_p, atol=1e-5)
        assert [[(s, e) for s, e, _ in row] for row in t] == [
            [(s, e) for s, e, _ in row] for row in ref_t
        ]
        flat = [x for row in t for _, _, x in row]
        assert np.allclose(flat, [x for row in ref_t for _, _, x in row], atol=1e-5)
    got, ref = served.compare(pairs), loaded.compare(pairs)
    assert [(r.relation, r.rationale) for r in got] == [(r.relation, r.rationale) for r in ref]


def test_a_fresh_process_answers_a_search_without_transformers(
    tiny_pair_model, tiny_index, tmp_path
):
    """The cold-start path end to end: the first search of a process exports what is missing;
    the next process serves every model from its graph, imports neither transformers nor
    (BM25 only: no PLAID) torch, and answers exactly what the PyTorch engine answers."""
    from perspect import Perspect
    from perspect.pipeline.engine import EngineConfig

    model = tmp_path / "model"
    shutil.copytree(tiny_pair_model, model, ignore=shutil.ignore_patterns("onnx"))
    claim = "Animals should have rights."
    ref = Perspect.open("tiny", home=tiny_index, model=model, config=EngineConfig(runtime="torch"))
    want = [
        (c.representative.id, round(c.representative.support, 4))
        for c in ref.search(claim).clusters
    ]
    Perspect.open("tiny", home=tiny_index, model=model).search(claim)  # exports the graph
    code = (
        "import json, sys\n"
        "from perspect import Perspect\n"
        f"p = Perspect.open('tiny', home={str(tiny_index)!r}, model={str(model)!r})\n"
        f"r = p.search({claim!r})\n"
        "heavy = sorted({n.split('.')[0] for n in sys.modules} & "
        "{'torch', 'transformers', 'sentence_transformers', 'sklearn', 'pylate'})\n"
        "got = [(c.representative.id, round(c.representative.support, 4)) for c in r.clusters]\n"
        "print(json.dumps({'heavy': heavy, 'got': got}))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["heavy"] == []
    assert [tuple(x) for x in out["got"]] == want and want


def test_models_prepare_exports_the_graphs_a_search_serves(tiny_pair_model, tmp_path):
    from tests.conftest import run_cli

    root = tmp_path / "models"
    shutil.copytree(tiny_pair_model, root / "pair", ignore=shutil.ignore_patterns("onnx"))
    assert PairModel.serving(root / "pair") is None
    r = run_cli("models", "prepare", "--dir", str(root))
    assert "pair: served on ONNX Runtime" in r.stdout
    assert PairModel.serving(root / "pair") is not None
    again = run_cli("models", "prepare", "--dir", str(root))  # nothing to redo
    assert "pair: served on ONNX Runtime" in again.stdout


def test_int8_copies_are_served_too_and_stay_close_to_fp32(tiny_pair_model, tmp_path):
    from perspect.core.model.onnxrt import INT8

    folder = tmp_path / "model"
    shutil.copytree(tiny_pair_model, folder, ignore=shutil.ignore_patterns("onnx"))
    model = PairModel.load(folder)
    pairs = list(zip(TEXTS_A, TEXTS_B, strict=True))
    ref = model.logits(pairs, ["relevance", "stance"])
    assert PairModel.serving(folder, int8=True) is None
    q = model.for_inference(int8=True)
    assert q.manifest["quantized"] == INT8 and (folder / "onnx" / "pair.int8.onnx").is_file()
    served = PairModel.serving(folder, int8=True)
    assert served is not None and served.manifest["quantized"] == INT8
    got = served.logits(pairs, ["relevance", "stance"])
    for t in ("relevance", "stance"):
        assert np.allclose(got[t], ref[t], atol=0.05) and not np.array_equal(got[t], ref[t])
    # asked for the other precision, a served model serves it (or makes it) from the same folder
    fp32 = served.for_inference(int8=False)
    assert "quantized" not in fp32.manifest
    assert np.allclose(fp32.logits(pairs, ["relevance"])["relevance"], ref["relevance"], atol=1e-5)


# Two processes that open one graph of a new install at once (two test workers, two server
# workers): each exports under the graph's flock or waits for the other's, and both serve it.
_OPEN_AT_ONCE = r"""
import sys, time
from pathlib import Path
import torch
from perspect.core.model import onnxrt

folder = Path(sys.argv[1])


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)
        torch.nn.init.constant_(self.lin.weight, 0.25)

    def forward(self, input_ids):
        return self.lin(input_ids)


net = Net()


def make(path):
    time.sleep(1.0)  # long enough that the other process arrives while this one writes
    x = {"input_ids": torch.zeros(2, 4)}
    onnxrt.export(net, x, path, {0: "batch"})


sess = onnxrt.session(folder, "tiny", "fp-1", make)
print("onnx" if sess is not None else "torch")
"""


def test_two_processes_opening_a_new_graph_at_once_both_serve_it(tmp_path):
    procs = [
        subprocess.Popen([sys.executable, "-c", _OPEN_AT_ONCE, str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    outs = [p.communicate(timeout=300) for p in procs]
    assert [o.strip() for o, _ in outs] == ["onnx", "onnx"], [e[-2000:] for _, e in outs]
    from perspect.core.model import onnxrt

    graph = tmp_path / "onnx" / "tiny.onnx"
    assert onnxrt.graph_problem(graph) is None
    assert not list((tmp_path / "onnx").glob(".*tmp-*"))
