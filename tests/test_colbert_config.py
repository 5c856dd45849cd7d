from __future__ import annotations

import json
import subprocess
from pathlib import Path

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


# -- a plan whose model is a hub id, offline (RAGatouille's colbert-ir/colbertv2.0) ------------
ROOT = Path(__file__).resolve().parent.parent
BUNDLE_COLBERT = ROOT / "models" / "colbert"


def _plan(tmp_path) -> Path:
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(PLAN))
    return p


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """An empty Hugging Face cache: the plan's hub id is nowhere on this machine."""
    import huggingface_hub

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    real = huggingface_hub.snapshot_download

    def local_only(repo_id, **kw):
        return real(repo_id, **{**kw, "cache_dir": str(cache)})

    monkeypatch.setattr(huggingface_hub, "snapshot_download", local_only)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_plan_with_an_unavailable_hub_model_uses_the_bundle_model_and_says_so(
    tmp_path, monkeypatch, offline_hub
):
    from perspect import api

    if not BUNDLE_COLBERT.is_dir():
        pytest.skip("no shipped ColBERT model")
    monkeypatch.setenv("PERSPECT_COLBERT_MODEL", str(BUNDLE_COLBERT))
    notes: list[str] = []
    cfg = api.index_config(("bm25", "colbert"), colbert_config=_plan(tmp_path), note=notes.append)
    opts = cfg.backends["colbert"]
    assert opts["model"] == str(BUNDLE_COLBERT.resolve())
    assert (opts["nbits"], opts["doc_maxlen"], opts["query_maxlen"], opts["kmeans_niters"]) == (
        4,
        180,
        32,
        20,
    )
    said = " ".join(notes)
    assert "colbert-ir/colbertv2.0" in said and "bundle" in said and "--colbert-model" in said

    # --colbert-model wins, and then nothing is said about a fallback
    notes.clear()
    cfg = api.index_config(
        ("bm25", "colbert"),
        colbert_model=str(tmp_path),
        colbert_config=_plan(tmp_path),
        note=notes.append,
    )
    assert cfg.backends["colbert"]["model"] == str(tmp_path.resolve())
    assert cfg.backends["colbert"]["nbits"] == 4
    assert not any("cannot be loaded" in n for n in notes)


def test_plan_with_an_unavailable_model_and_no_bundle_model_is_one_clear_error(
    tmp_path, monkeypatch, offline_hub
):
    from perspect import api
    from perspect.core.errors import PerspectError

    monkeypatch.setenv("PERSPECT_COLBERT_MODEL", str(tmp_path / "none"))
    with pytest.raises(PerspectError, match=r"colbert-ir/colbertv2\.0") as e:
        api.index_config(("bm25", "colbert"), colbert_config=_plan(tmp_path))
    assert "--colbert-model" in (e.value.hint or "")


@pytest.mark.slow
def test_build_from_a_ragatouille_plan_offline_end_to_end(tmp_path, pools):
    """`perspect index build --colbert-config plan.json` offline: built with the bundle's model
    and the plan's settings, and searchable (a small pool: exact scoring, no kernels)."""
    import os

    from .conftest import perspect_cmd

    if not BUNDLE_COLBERT.is_dir():
        pytest.skip("no shipped ColBERT model")
    env = {
        **os.environ,
        "PERSPECT_COLBERT_MODEL": str(BUNDLE_COLBERT),
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hf-cache"),
    }
    home = tmp_path / "h"
    build = [
        *perspect_cmd(),
        "index",
        "build",
        "--name",
        "rag",
        "--perspectives",
        str(pools["perspectives"]),
        "--retrievers",
        "bm25,colbert",
        "--colbert-config",
        str(_plan(tmp_path)),
        "--home",
        str(home),
    ]
    r = subprocess.run(build, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "cannot be loaded offline" in " ".join(r.stderr.split())
    manifest = json.loads(next(home.glob("rag/versions/*/manifest.json")).read_text())
    opts = manifest["config"]["backends"]["colbert"]
    assert opts["model"] == str(BUNDLE_COLBERT.resolve()) and opts["nbits"] == 4
    search = [*perspect_cmd(), "search", "Animals feel pain", "--index", "rag", "--home"]
    search += [str(home), "--retriever", "colbert", "--json"]
    r = subprocess.run(search, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hits"][0]["id"] == "1"
