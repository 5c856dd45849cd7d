from __future__ import annotations

import json

import pytest

from perspect.core.errors import InputError
from perspect.indexer.colbert_config import ColBERTConfig, from_colbert_json

# Shape of a colbert-ai / RAGatouille plan.json (values as RAGatouille writes for colbertv2.0).
PLAN = {
    "config": {
        "query_token_id": "[unused0]",
        "doc_token_id": "[unused1]",
        "query_token": "[Q]",
        "doc_token": "[D]",
        "ncells": None,
        "centroid_score_threshold": None,
        "ndocs": None,
        "load_index_with_mmap": False,
        "index_path": None,
        "index_bsize": 64,
        "nbits": 4,
        "kmeans_niters": 20,
        "resume": False,
        "similarity": "cosine",
        "bsize": 32,
        "accumsteps": 1,
        "lr": 1e-05,
        "maxsteps": 400000,
        "save_every": None,
        "warmup": 20000,
        "warmup_bert": None,
        "relu": False,
        "nway": 64,
        "use_ib_negatives": True,
        "reranker": False,
        "distillation_alpha": 1.0,
        "ignore_scores": False,
        "model_name": "colbert-ir/colbertv2.0",
        "query_maxlen": 32,
        "attend_to_mask_tokens": False,
        "interaction": "colbert",
        "dim": 128,
        "doc_maxlen": 180,
        "mask_punctuation": True,
        "checkpoint": "colbert-ir/colbertv2.0",
        "triples": "/future/u/okhattab/root/unit/experiments/2021.10/downstream.distillation.round2.2_score/round2.nway6.cosine.ib/examples.64.json",
        "collection": ["..."],
        "queries": None,
        "index_name": "perspectives",
        "overwrite": False,
        "root": ".ragatouille/",
        "experiment": "colbert",
        "index_root": None,
        "name": "2024-06/10/12.00.00",
        "rank": 0,
        "nranks": 1,
        "amp": True,
        "gpus": 0,
        "avoid_fork_if_possible": False,
    },
    "num_chunks": 1,
    "num_partitions": 2048,
    "num_embeddings_est": 123456.0,
    "avg_doclen_est": 14.2,
}


def test_plan_json_maps_onto_our_config(tmp_path):
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    got = from_colbert_json(tmp_path)  # a folder works too
    assert got.config == ColBERTConfig(
        checkpoint="colbert-ir/colbertv2.0",
        dim=128,
        nbits=4,
        doc_maxlen=180,
        query_maxlen=32,
        kmeans_niters=20,
        similarity="cosine",
    )
    assert "lr" in got.ignored and "gpus" in got.ignored and "nbits" not in got.ignored
    assert got.source.endswith("plan.json")


def test_metadata_json_and_defaults(tmp_path):
    p = tmp_path / "metadata.json"
    p.write_text(json.dumps({"config": {"dim": 96, "doc_maxlen": 300}, "num_chunks": 3}))
    c = from_colbert_json(p).config
    assert (c.dim, c.doc_maxlen, c.nbits, c.query_maxlen, c.checkpoint) == (96, 300, 2, 32, None)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "not a JSON ColBERT config"),
        (json.dumps({"config": {"foo": 1}}), "no ColBERT settings"),
        (json.dumps({"config": {"dim": -5}}), "invalid value for dim"),
        (json.dumps({"config": {"dim": 128, "nbits": 3}}), "nbits must be"),
    ],
)
def test_bad_configs_are_refused(tmp_path, content, reason):
    p = tmp_path / "plan.json"
    p.write_text(content)
    with pytest.raises(InputError, match=reason):
        from_colbert_json(p)
