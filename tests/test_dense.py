"""The dense bi-encoder backend (packaged all-MiniLM-L6-v2 + faiss) and index-time evidence links."""

from __future__ import annotations

import numpy as np
import pytest

from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer, Source
from perspect.indexer.links import Links
from perspect.retriever.searcher import Searcher
from tests.conftest import write_json

CONFIG = IndexConfig(("bm25", "dense"))


@pytest.fixture
def dense_home(pools, home):
    srcs = [Source("perspectives", pools["perspectives"]), Source("evidence", pools["evidence"])]
    Indexer("d", home=home, config=CONFIG).build(srcs)
    return home


def test_dense_finds_a_paraphrase_bm25_cannot(dense_home):
    s = Searcher("d", home=dense_home)
    # No content word shared with "Animals feel pain and deserve legal protection."
    q = "creatures that suffer should be shielded by statute"
    assert s.search(q, "perspectives", 1, retriever="dense").hits[0].id == "1"
    assert s.search(q, "perspectives", 3, retriever="bm25").hits == ()
    assert s.search(q, "perspectives", 1).retriever == "hybrid"


def test_vectors_are_stored_not_recomputed(dense_home):
    s = Searcher("d", home=dense_home)
    b = s.backend("perspectives", "dense")
    v = b.vectors(["1", "3", "missing"])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v[:2], axis=1), 1, atol=1e-4)
    assert not v[2].any()
    # the stored vector is the one a fresh encoding gives
    assert np.allclose(v[0], b.embed_queries([s.store("perspectives").get("1").text])[0], atol=1e-4)


def test_queries_on_onnx_runtime_match_pytorch(dense_home):
    from perspect.retriever.dense import encode

    b = Searcher("d", home=dense_home).backend("perspectives", "dense")
    assert b._query_session() is not None  # exported when the index was built
    texts = ["animals should have rights", "  a longer query about wind turbines and Électricité "]
    for batch in ([texts[0]], texts, texts * 5):  # 10 texts: two ONNX calls, order kept
        assert np.allclose(b.embed_queries(batch), encode(b.model, batch), atol=1e-5)
    b.config["query_runtime"], b._session = "torch", False
    assert b._query_session() is None
    assert np.allclose(b.embed_queries(texts[:1]), encode(b.model, texts[:1]), atol=1e-6)


def test_dense_queries_fall_back_to_torch_when_the_export_cannot_be_written(
    dense_home, tmp_path, monkeypatch
):
    import shutil

    from perspect.retriever.dense import DenseBackend, load_encoder, resolve_model

    b = Searcher("d", home=dense_home).backend("perspectives", "dense")
    model_dir = tmp_path / "model"
    shutil.copytree(
        resolve_model(b.config["model"]), model_dir, ignore=shutil.ignore_patterns("onnx")
    )
    (model_dir / "perspect_manifest.json").write_text("{}")  # a Perspect model: graph in its folder
    (model_dir / "onnx").write_text("a file where the export folder would go")
    fresh = DenseBackend(tmp_path / "unused", {"model": str(model_dir)})
    assert fresh._query_session() is None  # logged, not raised
    q = ["creatures that suffer should be shielded by statute"]
    from perspect.retriever.dense import encode

    assert np.allclose(fresh.embed_queries(q), encode(load_encoder(str(model_dir)), q), atol=1e-6)


def test_links_are_built_and_follow_updates(dense_home, tmp_path):
    s = Searcher("d", home=dense_home)
    links = Links(s.version).get(["1", "4"])
    assert links["1"][0].evidence_id == "10"  # the pain paragraph backs the pain perspective
    assert links["4"][0].evidence_id == "11"  # reactors back nuclear power
    assert s.manifest["links"]["perspectives"] == 6

    new_p = write_json(tmp_path / "p2.json", [{"pId": 7, "text": "Reactors are low carbon."}])
    Indexer("d", home=dense_home).add([Source("perspectives", new_p)])
    s2 = Searcher("d", home=dense_home)
    assert Links(s2.version).get(["7"])["7"][0].evidence_id == "11"
    assert Links(s2.version).count() == 7

    new_e = write_json(
        tmp_path / "e2.json",
        [{"eId": 12, "text": "Uniforms cut bullying because no one is mocked for clothes."}],
    )
    Indexer("d", home=dense_home).add([Source("evidence", new_e)])
    s3 = Searcher("d", home=dense_home)
    assert Links(s3.version).get(["3"])["3"][0].evidence_id == "12"

    Indexer("d", home=dense_home).delete("evidence", ["12"])
    s4 = Searcher("d", home=dense_home)
    assert all(x.evidence_id != "12" for x in Links(s4.version).get(["3"])["3"])
    Indexer("d", home=dense_home).delete("perspectives", ["7"])
    assert Links(Searcher("d", home=dense_home).version).get(["7"])["7"] == []


def test_dense_add_replace_delete_reload(dense_home, tmp_path):
    new_p = write_json(
        tmp_path / "p2.json", [{"pId": 3, "text": "Wind turbines generate clean electricity."}]
    )
    Indexer("d", home=dense_home).add([Source("perspectives", new_p)])
    s = Searcher("d", home=dense_home)
    assert s.backend("perspectives", "dense").count() == 6
    top = s.search("renewable electricity from wind", "perspectives", 1, retriever="dense")
    assert top.hits[0].id == "3"
    Indexer("d", home=dense_home).delete("perspectives", ["3"])
    s = Searcher("d", home=dense_home)
    ids = [h.id for h in s.search("wind", "perspectives", 10, retriever="dense").hits]
    assert "3" not in ids and len(ids) == 5


def test_links_on_the_fly_match_precomputed(pools, home, tiny_pair_model):
    from perspect.pipeline.engine import Engine
    from perspect.reranker.model import PairModel

    srcs = [Source("perspectives", pools["perspectives"]), Source("evidence", pools["evidence"])]
    Indexer("pre", home=home, config=CONFIG).build(srcs)
    lazy = IndexConfig(("bm25", "dense"), links=False)
    Indexer("lazy", home=home, config=lazy).build(srcs)
    assert Searcher("lazy", home=home).links() is None
    model = PairModel.load(tiny_pair_model)
    groups = [["1"], ["4", "6"], ["3", "5"]]
    pre = Engine.load(Searcher("pre", home=home), model).evidence(groups)
    fly = Engine.load(Searcher("lazy", home=home), model).evidence(groups)
    assert [[e.id for e in g] for g in pre] == [[e.id for e in g] for g in fly]
    assert pre[0][0].id == "10" and pre[1][0].id == "11"


def test_runs_overlap_retrievers_and_return_the_query_vector(dense_home):
    from perspect.retriever.searcher import concurrently

    s = Searcher("d", home=dense_home)
    q = "creatures that suffer should be shielded by statute"
    runs, qv = s.runs(q, "perspectives", 5)
    alone = [s.backend("perspectives", k).search(q, 5) for k in s.retrievers]
    assert [[i for i, _ in r] for r in runs] == [[i for i, _ in r] for r in alone]
    assert np.allclose(qv, s.backend("perspectives", "dense").embed_queries([q])[0], atol=1e-6)
    assert concurrently([lambda: 1, lambda: 2, lambda: 3]) == [1, 2, 3]
    with pytest.raises(ZeroDivisionError):  # a failing retriever fails the search, loudly
        concurrently([lambda: 1, lambda: 1 / 0])


def test_an_add_encodes_on_onnx_runtime_without_loading_pytorch_models(dense_home, tmp_path):
    """Once the encoder's graph is made, a write encodes its items with it (issue 42: an add of
    a few articles paid seconds to import sentence-transformers): the vectors PyTorch gives."""
    import subprocess
    import sys

    from perspect.retriever.dense import encode
    from tests.conftest import NEWS, write_jsonl

    news = write_jsonl(tmp_path / "n.jsonl", NEWS)
    code = (
        "import sys; from perspect.indexer.indexer import Indexer, Source; "
        f"Indexer('d', home={str(dense_home)!r}).add([Source('news', {str(news)!r})]); "
        "print('sentence_transformers' in sys.modules, 'transformers' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["False", "False"]
    s = Searcher("d", home=dense_home)
    b, store = s.backend("news", "dense"), s.store("news")
    ids = [it.id for it in store]
    got = b.vectors(ids)
    assert np.allclose(got, encode(b.model, [store.get(i).text for i in ids]), atol=1e-5)
