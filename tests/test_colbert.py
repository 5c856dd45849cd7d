"""ColBERT backend with a tiny model the tests build (random 2-layer BERT + projection).

The first PLAID build compiles the stanford C++ kernels (2-3 min, once per configuration, into
.cache/torch_extensions/plaid-KEY/: retriever/plaid_kernels.py), so these tests are marked
`plaid`; they run in CI, and compile once per clean clone.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from perspect import Perspect
from perspect.core.errors import ModelError
from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer, Source

from .conftest import perspect_cmd, write_jsonl

pytestmark = [pytest.mark.plaid, pytest.mark.slow]

DOCS = [
    {"id": f"d{i}", "text": t}
    for i, t in enumerate(
        [
            "Animals feel pain and deserve legal protection.",
            "Zoos keep endangered species alive.",
            "School uniforms reduce bullying among pupils.",
            "Nuclear power is a clean source of energy.",
            "Uniforms stifle the self-expression of students.",
            "Eating meat is natural for humans.",
            "Wind farms spoil the landscape.",
            "Taxes on sugar reduce obesity.",
            "Social media harms the mental health of teenagers.",
            "Space exploration is a waste of public money.",
            "Homework improves discipline in children.",
            "Voting should be compulsory in democracies.",
        ]
        * 1
    )
]


def _config(model) -> IndexConfig:
    return IndexConfig(
        retrievers=("bm25", "colbert"),
        backends={
            "colbert": {
                "model": str(model),
                "doc_maxlen": 32,
                "query_maxlen": 16,
                "kmeans_niters": 2,
            }
        },
    )


def test_colbert_index_search_add_delete_reload(tiny_colbert, tmp_path):
    pool = write_jsonl(tmp_path / "p.jsonl", DOCS)
    Indexer("c", home=tmp_path / "h", config=_config(tiny_colbert)).build(
        [Source("perspectives", pool)]
    )
    p = Perspect.open("c", home=tmp_path / "h")
    assert p.manifest["config"]["retrievers"] == ["bm25", "colbert"]
    target = DOCS[8]["text"]
    hits = p.retrieve(target, k=5, retriever="colbert").hits
    assert hits[0].id == "d8"  # an exact restatement wins on MaxSim
    hybrid = p.retrieve(target, k=5)
    assert hybrid.retriever == "hybrid" and hybrid.hits[0].id == "d8"

    new = write_jsonl(
        tmp_path / "n.jsonl",
        [
            {
                "id": "x1",
                "text": "Robots and self-driving lorries will replace most human drivers within a decade.",
            }
        ],
    )
    Indexer("c", home=tmp_path / "h").add([Source("perspectives", new)])
    p = Perspect.open("c", home=tmp_path / "h")
    assert p.pools["perspectives"] == 13
    assert (
        p.retrieve(
            "Robots and self-driving lorries will replace most human drivers within a decade.",
            k=3,
            retriever="colbert",
        )
        .hits[0]
        .id
        == "x1"
    )

    Indexer("c", home=tmp_path / "h").delete("perspectives", ["x1", "d8"])
    p = Perspect.open("c", home=tmp_path / "h")
    ids = {
        h.id
        for h in p.retrieve(
            "Robots and self-driving lorries will replace most human drivers within a decade.",
            k=12,
            retriever="colbert",
        ).hits
    }
    assert "x1" not in ids and "d8" not in ids and len(ids) == 11
    backend = p._searcher.backend("perspectives", "colbert")
    assert backend.count() == 11


def test_large_pool_uses_plaid_and_small_growth_switches_to_it(tiny_colbert, tmp_path):
    import random

    rnd = random.Random(3)
    words = (
        "law tax school energy wind health vote court police rights market climate speech "
        "privacy trade union church state art sport food water city farm"
    ).split()
    docs = [
        {"id": f"s{i}", "text": " ".join(rnd.choice(words) for _ in range(8)) + f" n{i}"}
        for i in range(1100)
    ]
    pool = write_jsonl(tmp_path / "big.jsonl", docs)
    Indexer("big", home=tmp_path / "h", config=_config(tiny_colbert)).build(
        [Source("perspectives", pool)]
    )
    p = Perspect.open("big", home=tmp_path / "h")
    b = p._searcher.backend("perspectives", "colbert")
    assert b.mode == "plaid" and b.count() == 1100
    assert (b.folder / "plaid" / "plan.json").is_file()
    hits = p.retrieve(docs[42]["text"], k=10, retriever="colbert").hits
    assert "s42" in {h.id for h in hits}
    # read through the searcher opened without PyLate's package; the id map is JSON (PyLate's
    # pickles are deleted after the build: nothing read from an index can run code)
    assert b._plaid is None and b._reader is not None
    assert not list(b.folder.rglob("*.pkl")) and (b.folder / "plaid_ids.json").is_file()
    # PLAID prints progress to stdout; the CLI's --json output must stay pure JSON
    out = subprocess.run(
        [
            *perspect_cmd(),
            "search",
            docs[42]["text"],
            "--index",
            "big",
            "--home",
            str(tmp_path / "h"),
            "--retriever",
            "hybrid",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out)["retriever"] == "hybrid"
    Indexer("big", home=tmp_path / "h").delete("perspectives", ["s42"])
    p = Perspect.open("big", home=tmp_path / "h")
    assert "s42" not in {h.id for h in p.retrieve(docs[42]["text"], k=10, retriever="colbert").hits}

    # a small index in exact mode is rebuilt as PLAID once it outgrows the threshold
    small = write_jsonl(tmp_path / "small.jsonl", DOCS)
    Indexer("grow", home=tmp_path / "h", config=_config(tiny_colbert)).build(
        [Source("perspectives", small)]
    )
    g = Perspect.open("grow", home=tmp_path / "h")
    assert g._searcher.backend("perspectives", "colbert").mode == "exact"
    rep = Indexer("grow", home=tmp_path / "h").add([Source("perspectives", pool)])
    g = Perspect.open("grow", home=tmp_path / "h")
    gb = g._searcher.backend("perspectives", "colbert")
    assert gb.mode == "plaid" and gb.count() == 1112 and rep.counts["perspectives"] == 1112
    assert any(op["op"] == "rebuild" for op in g.manifest["operations"])


def test_index_refuses_a_changed_model(tiny_colbert, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(tiny_colbert, model)
    pool = write_jsonl(tmp_path / "p.jsonl", DOCS)
    Indexer("c", home=tmp_path / "h", config=_config(model)).build([Source("perspectives", pool)])
    (model / "perspect_manifest.json").write_text(json.dumps({"retrained": True}))
    p = Perspect.open("c", home=tmp_path / "h")
    with pytest.raises(ModelError, match="changed since this index was built"):
        p.retrieve("zoos", retriever="colbert")


def test_missing_colbert_model_is_a_clear_error(tmp_path):
    pool = write_jsonl(tmp_path / "p.jsonl", DOCS)
    cfg = IndexConfig(("bm25", "colbert"), {"colbert": {"model": str(tmp_path / "nope")}})
    with pytest.raises(ModelError, match="no ColBERT model") as e:
        Indexer("c", home=tmp_path / "h", config=cfg).build([Source("perspectives", pool)])
    assert "perspect train --task colbert" in e.value.hint
    assert not (tmp_path / "h" / "c" / "CURRENT").exists()


def test_queries_are_expanded_to_the_minimum_but_never_cut(tiny_colbert, tmp_path):
    pool = write_jsonl(tmp_path / "p.jsonl", DOCS)
    cfg = _config(tiny_colbert)
    cfg.backends["colbert"]["query_maxlen_cap"] = 40
    Indexer("c", home=tmp_path / "h", config=cfg).build([Source("perspectives", pool)])
    b = Perspect.open("c", home=tmp_path / "h")._searcher.backend("perspectives", "colbert")
    short, long = "animals", " ".join(["animals feel pain"] * 8)  # ~26 tokens
    assert b.query_length(short) == 16
    assert 26 < b.query_length(long) <= 40 and b.query_length(long * 4) == 40
    # the encoded query has one vector per (expanded) token, so nothing of a long one is dropped
    q_short, q_long = b.encode([short, long], is_query=True)
    assert len(q_short) == 16 and len(q_long) == b.query_length(long)
    # ONNX Runtime (exported into the model folder at the first query) and the lean PyTorch
    # path both compute what PyLate's own encode does
    assert (tiny_colbert / "onnx" / "colbert-query.onnx").is_file()
    for runtime in ("onnx", "torch"):
        b.config["query_runtime"] = runtime
        assert (b._onnx_session() is not None) == (runtime == "onnx")
        for text in (short, long):
            b.model.query_length = b.query_length(text)
            ref = b.model.encode([text], is_query=True, show_progress_bar=False)[0]
            assert np.allclose(b.encode([text], is_query=True)[0], ref, atol=1e-5)


def test_queries_without_pylate_are_pylates_queries(tiny_colbert, tmp_path):
    """The serving path (tokenizers + the exported graph, PyLate never loaded) gives the vectors
    PyLate's own encode gives, for short, long, padded and accented queries."""
    pool = write_jsonl(tmp_path / "p.jsonl", DOCS)
    cfg = _config(tiny_colbert)
    cfg.backends["colbert"]["query_maxlen_cap"] = 40
    Indexer("c", home=tmp_path / "h", config=cfg).build([Source("perspectives", pool)])
    ref_b = Perspect.open("c", home=tmp_path / "h")._searcher.backend("perspectives", "colbert")
    assert ref_b._onnx_session() is not None  # the graph is exported
    texts = ["animals", "  Tierrechte für Zoos: ja? ", " ".join(["animals feel pain"] * 20)]
    b = Perspect.open("c", home=tmp_path / "h")._searcher.backend("perspectives", "colbert")
    got = b.encode(texts, is_query=True)
    assert b._light and b._model is None  # served without loading PyLate's model
    m = ref_b.model
    for text, vecs in zip(texts, got, strict=True):
        assert b.query_length(text) == ref_b.query_length(text)
        m.query_length = ref_b.query_length(text)
        ref = m.encode([text], is_query=True, show_progress_bar=False)[0]
        assert vecs.shape == tuple(ref.shape) and np.allclose(vecs, ref, atol=1e-5)


def test_documents_without_pylate_are_pylates_documents(tiny_colbert, tmp_path):
    """A write encodes documents with the exported graph once it is made (issue 42: an add of a
    few articles loaded PyLate and transformers): PyLate's own vectors, skiplist and truncation
    included."""
    pool = write_jsonl(tmp_path / "p.jsonl", DOCS)
    Indexer("c", home=tmp_path / "h", config=_config(tiny_colbert)).build(
        [Source("perspectives", pool)]
    )
    ref_b = Perspect.open("c", home=tmp_path / "h")._searcher.backend("perspectives", "colbert")
    assert ref_b._onnx_session() is not None  # the graph is exported
    texts = [
        "Animals feel pain!",
        "  Tierrechte für Zoos: ja? (oder nein) ",
        " ".join(["animals feel pain, and deserve rights."] * 60),  # past the document length
    ]
    b = Perspect.open("c", home=tmp_path / "h")._searcher.backend("perspectives", "colbert")
    got = b.encode(texts, is_query=False)
    assert b._light and b._model is None  # PyLate's model never loaded
    ref = ref_b.model.encode(texts, is_query=False, show_progress_bar=False)
    for vecs, want in zip(got, ref, strict=True):
        assert vecs.shape == tuple(want.shape) and np.allclose(vecs, want, atol=1e-5)


def test_queries_fall_back_to_torch_when_the_onnx_export_cannot_be_written(tiny_colbert, tmp_path):
    from perspect.retriever import onnx_query
    from perspect.retriever.colbert import load_colbert

    model_dir = tmp_path / "model"
    shutil.copytree(tiny_colbert, model_dir, ignore=shutil.ignore_patterns("onnx"))
    (model_dir / "onnx").write_text("a file where the export folder would go")
    model = load_colbert(model_dir, 16, 32)
    assert onnx_query.session(model, model_dir, "fp") is None  # logged, not raised
    pool = write_jsonl(tmp_path / "p.jsonl", DOCS)
    Indexer("c", home=tmp_path / "h", config=_config(model_dir)).build(
        [Source("perspectives", pool)]
    )
    p = Perspect.open("c", home=tmp_path / "h")
    assert p.retrieve(DOCS[8]["text"], k=3, retriever="colbert").hits[0].id == "d8"
