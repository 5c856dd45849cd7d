"""The Elasticsearch backend: request bodies (pure functions, the shapes the client documents),
backend selection, one-line errors without a server; and, where `PERSPECT_ES_URL` names a
reachable cluster, the whole backend against it (skipped here: no server can be installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perspect.core.errors import PerspectError
from perspect.retriever import es_bodies as body
from perspect.retriever.registry import backend_class

pytest.importorskip("elasticsearch", reason="the elasticsearch client is not installed")

from perspect.retriever import elastic


def test_names_are_valid_elasticsearch_index_names():
    name = body.physical_name("perspect", "My.Index", "perspectives-dense", "v000002-20261124T0101")
    assert name == name.lower() and " " not in name and not name.startswith(("-", "_", "."))
    assert name.startswith(body.alias_name("perspect", "My.Index", "perspectives-dense") + "-")


def test_mapping_holds_only_the_fields_of_the_retrievers_asked_for():
    m = body.mapping()
    assert set(m["mappings"]["properties"]) == {"id", "text"}
    assert m["mappings"]["properties"]["text"]["analyzer"] == "english"
    m = body.mapping(dense_dims=384, colbert_dims=128)
    props = m["mappings"]["properties"]
    assert props["dense"] == {
        "type": "dense_vector",
        "dims": 384,
        "index": True,
        "similarity": "dot_product",
        "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
    }
    assert props["colbert"] == {"type": "rank_vectors", "dims": 128}
    assert m["mappings"]["dynamic"] == "strict"


def test_bm25_and_knn_bodies():
    q = body.bm25_query("animals have rights", 7)
    assert q == {
        "size": 7,
        "query": {"match": {"text": {"query": "animals have rights"}}},
        "_source": False,
    }
    k = body.knn_query([0.5, 0.5], 10)
    assert k["knn"]["field"] == "dense" and k["knn"]["k"] == 10
    assert k["knn"]["num_candidates"] >= 100 and k["knn"]["query_vector"] == [0.5, 0.5]
    assert body.knn_query([1.0], 60)["knn"]["num_candidates"] == 240


def test_maxsim_rescore_orders_by_colbert_alone():
    tokens = [[1.0, 0.0], [0.0, 1.0]]
    b = body.maxsim_rescore(tokens, "claim text", k=20, window=50)
    r = b["rescore"]
    assert r["window_size"] == 50 and r["query"]["query_weight"] == 0.0
    script = r["query"]["rescore_query"]["script_score"]["script"]
    assert "maxSimDotProduct(params.query_vector, 'colbert')" in script["source"]
    assert script["params"]["query_vector"] == tokens
    assert b["query"] == {"match": {"text": {"query": "claim text"}}} and "knn" not in b
    assert body.maxsim_rescore(tokens, "x", k=200, window=50)["rescore"]["window_size"] == 200
    with_dense = body.maxsim_rescore(tokens, "x", k=20, window=50, dense=[0.1, 0.2])
    assert with_dense["knn"]["k"] == 50 and with_dense["knn"]["field"] == "dense"


def test_bulk_lines_alternate_action_and_document():
    lines = body.index_actions("ix", [("a", "first"), ("b", "second")], dense=[[1, 0], [0, 1]])
    assert lines[0] == {"index": {"_index": "ix", "_id": "a"}}
    assert lines[1] == {"id": "a", "text": "first", "dense": [1.0, 0.0]}
    assert lines[2]["index"]["_id"] == "b" and len(lines) == 4
    col = body.index_actions("ix", [("a", "t")], colbert=[[[1, 2], [3, 4]]])
    assert col[1]["colbert"] == [[1.0, 2.0], [3.0, 4.0]]
    assert body.delete_actions("ix", ["a"]) == [{"delete": {"_index": "ix", "_id": "a"}}]


def test_alias_swap_is_one_atomic_request():
    acts = body.alias_actions("al", "new", ["old1", "new", "old2"])["actions"]
    assert acts == [
        {"remove": {"index": "old1", "alias": "al"}},
        {"remove": {"index": "old2", "alias": "al"}},
        {"add": {"index": "new", "alias": "al"}},
    ]
    assert body.alias_actions("al", "new")["actions"] == [{"add": {"index": "new", "alias": "al"}}]


BULK_RESPONSE = {
    "errors": True,
    "items": [
        {"index": {"_id": "ok", "status": 201}},
        {
            "index": {
                "_id": "busy",
                "status": 429,
                "error": {"type": "es_rejected_execution_exception", "reason": "queue full"},
            }
        },
        {
            "index": {
                "_id": "bad",
                "status": 400,
                "error": {"type": "document_parsing_exception", "reason": "dims 3 != 384"},
            }
        },
        {"delete": {"_id": "gone", "status": 404}},
    ],
}


def test_bulk_failures_name_ids_and_reasons_and_which_to_retry():
    failed = body.bulk_failures(BULK_RESPONSE)
    assert [(i, s) for i, s, _ in failed] == [("busy", 429), ("bad", 400)]
    assert "dims 3 != 384" in failed[1][2] and "document_parsing_exception" in failed[1][2]
    assert body.retry_ids(BULK_RESPONSE) == {"busy"}
    assert body.bulk_failures({"errors": False, "items": BULK_RESPONSE["items"]}) == []
    assert [body.backoff(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0] and body.backoff(20) == 30.0


def test_retry_resends_only_the_failed_actions():
    lines = body.index_actions("ix", [("a", "1"), ("busy", "2")]) + body.delete_actions(
        "ix", ["busy", "c"]
    )
    again = elastic._only(lines, {"busy"})
    assert again == [lines[2], lines[3], lines[4]]


def test_hits_and_redaction():
    resp = {"hits": {"hits": [{"_id": "x", "_score": 2.5}, {"_id": "y", "_score": None}]}}
    assert body.hits(resp) == [("x", 2.5), ("y", 0.0)]
    assert elastic.redact("https://elastic:s3cret@es.example:9200/") == "https://es.example:9200/"
    assert elastic.redact("http://localhost:9200") == "http://localhost:9200"


def test_backend_class_follows_the_retrievers_engine():
    assert backend_class("bm25", {"engine": "elasticsearch"}) is elastic.EsBM25
    assert backend_class("dense", {"engine": "elasticsearch"}) is elastic.EsDense
    assert backend_class("colbert", {"engine": "elasticsearch"}) is elastic.EsColBERT
    assert backend_class("bm25", {}).__name__ == "TantivyBM25"
    with pytest.raises(PerspectError, match="unknown retrieval engine"):
        backend_class("bm25", {"engine": "solr"})


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "perspect.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PERSPECT_RETRIEVERS": "bm25", **(env or {})},
        timeout=120,
    )


def test_unreachable_cluster_is_one_line_and_keeps_the_previous_version(tmp_path: Path):
    pool = tmp_path / "p.jsonl"
    pool.write_text(
        "\n".join(json.dumps({"id": f"p{i}", "text": f"perspective number {i}"}) for i in range(5))
    )
    home = str(tmp_path / "home")
    assert _cli("index", "build", "--name", "x", "--home", home, "--perspectives", str(pool),
                "-q").returncode == 0  # fmt: skip
    r = _cli("index", "build", "--name", "x", "--home", home, "--perspectives", str(pool),
             "--backend", "elasticsearch", "--es-url", "http://elastic:s3cret@127.0.0.1:9", "-q")  # fmt: skip
    assert r.returncode == 2
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert errors == ["error: cannot reach Elasticsearch at http://127.0.0.1:9 (create index)"]
    assert "s3cret" not in r.stderr + r.stdout and "Traceback" not in r.stderr
    st = _cli("index", "status", "--name", "x", "--home", home, "--json")
    (m,) = json.loads(st.stdout)["indexes"]
    assert m["pools"]["perspectives"]["count"] == 5 and "engine" not in json.dumps(m["config"])
    r = _cli("index", "add", "--name", "x", "--home", home, "--perspectives", str(pool),
             "--backend", "elasticsearch")  # fmt: skip
    assert r.returncode == 2 and "lives on the embedded backend" in r.stderr


def test_build_without_url_says_how_to_give_one(tmp_path: Path):
    pool = tmp_path / "p.jsonl"
    pool.write_text(json.dumps({"id": "p", "text": "a perspective"}))
    env = {k: "" for k in ("PERSPECT_ES_URL",)}
    r = _cli("index", "build", "--name", "x", "--home", str(tmp_path), "--perspectives",
             str(pool), "--backend", "elasticsearch", env=env)  # fmt: skip
    assert r.returncode == 2 and "needs a cluster URL" in r.stderr


# -- against a real cluster -----------------------------------------------------------------------
ES_URL = os.environ.get("PERSPECT_ES_URL")
needs_server = pytest.mark.skipif(
    not ES_URL, reason="no Elasticsearch server: set PERSPECT_ES_URL to run the integration tests"
)


@needs_server
def test_build_search_add_delete_and_alias_on_a_real_cluster(tmp_path: Path):
    from perspect import api
    from perspect.indexer.indexer import Source

    pool = tmp_path / "p.jsonl"
    texts = {
        "p1": "Animals feel pain and deserve legal protection.",
        "p2": "Taxes on sugar reduce obesity.",
        "p3": "Zoos help conserve endangered species.",
    }
    pool.write_text("\n".join(json.dumps({"id": i, "text": t}) for i, t in texts.items()))
    home = tmp_path / "home"
    cfg = api.index_config(["bm25"], engine="elasticsearch", es_url=ES_URL)
    api.build_index("estest", [Source("perspectives", str(pool))], home=home, config=cfg)
    with api.Perspect.open("estest", home=home) as p:
        hits = p.retrieve("legal protection for animals", k=2).hits
        assert hits[0].id == "p1"
    extra = tmp_path / "q.jsonl"
    extra.write_text(json.dumps({"id": "p4", "text": "Animal testing should be banned."}))
    api.add_to_index("estest", [Source("perspectives", str(extra))], home=home)
    api.delete_from_index("estest", "perspectives", ["p2"], home=home)
    with api.Perspect.open("estest", home=home) as p:
        assert p.pools["perspectives"] == 3
        ids = {h.id for h in p.retrieve("animal testing banned", k=5).hits}
        assert "p4" in ids and "p2" not in ids
    es = elastic.client({"url": ES_URL})
    alias = body.alias_name(body.PREFIX, "estest", "perspectives-bm25")
    live = list(es.indices.get_alias(name=alias))
    assert len(live) == 1 and es.count(index=alias)["count"] == 3
    # an interrupted build (a document Elasticsearch refuses) leaves the alias where it was
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x" * 600, "text": "an id longer than Elasticsearch's 512"}))
    with pytest.raises(PerspectError):
        api.build_index("estest", [Source("perspectives", str(bad))], home=home, config=cfg)
    assert list(es.indices.get_alias(name=alias)) == live
    for name in es.indices.get(index=f"{alias}-*"):
        es.indices.delete(index=name)
