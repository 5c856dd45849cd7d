"""The index lifecycle through the Python API: build, search, add, delete, status, bad input."""

from __future__ import annotations

import hashlib
import itertools
import json

import pytest

from perspect import Perspect
from perspect.core.errors import IndexBusy, IndexNotFound, InputError, PerspectError
from perspect.core.index.layout import IndexDir
from perspect.indexer.indexer import Indexer, Source

from .conftest import write_jsonl


def test_build_then_relevant_item_ranks_first(built):
    p = Perspect.open("tiny", home=built)
    assert p.pools == {"perspectives": 6, "evidence": 2, "news": 5}
    hits = p.retrieve("Should students wear school uniforms?").hits
    assert hits[0].id == "3" and {h.id for h in hits[:2]} == {"3", "5"}
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    ev = p.retrieve("do animals feel pain", pool="evidence").hits
    assert ev[0].id == "10" and ev[0].metadata["source"] == "test"
    news = p.retrieve("animal rights parliament", pool="news").hits
    assert news[0].id == "a1#0" and news[0].metadata["outlet"] == "Daily Planet"


def test_search_without_models_degrades_to_retrieval(built):
    res = Perspect.open("tiny", home=built).search("Should students wear school uniforms?")
    assert res.clusters == () and res.hits[0].id == "3"
    assert "make models" in res.coverage.warning  # the message names the fix


def test_results_are_frozen(built):
    hit = Perspect.open("tiny", home=built).retrieve("uniforms").hits[0]
    with pytest.raises(AttributeError):
        hit.score = 1.0
    with pytest.raises(TypeError):
        hit.metadata["source"] = "x"


def test_default_retrievers_are_bm25_and_dense(monkeypatch):
    from perspect.core.index.config import default_retrievers

    monkeypatch.delenv("PERSPECT_RETRIEVERS")
    assert default_retrievers() == ("bm25", "dense")  # no ColBERT model in tests
    monkeypatch.setenv("PERSPECT_RETRIEVERS", "bm25, colbert")
    assert default_retrievers() == ("bm25", "colbert")


def test_manifest_records_sources_config_and_versions(built, pools):
    m = Perspect.open("tiny", home=built).manifest
    assert m["pools"]["perspectives"] == {"count": 6, "retrievers": ["bm25"]}
    src = next(s for s in m["sources"] if s["pool"] == "perspectives")
    data = pools["perspectives"].read_bytes()
    assert src["size"] == len(data) and src["sha256"] == hashlib.sha256(data).hexdigest()
    assert m["config"]["retrievers"] == ["bm25"]
    assert {"tantivy", "python"} <= set(m["libraries"])
    # BM25-only links exist only where a perspective shares a term with some paragraph
    assert 0 < m["links"]["perspectives"] <= 6 and m["links"]["retrievers"] == ["bm25"]
    assert m["created_at"] and m["version"].startswith("v000001")


def test_add_replace_and_delete_in_place(built, tmp_path):
    idx = Indexer("tiny", home=built)
    new = write_jsonl(
        tmp_path / "more.jsonl",
        [
            {"id": "7", "text": "Wind turbines kill birds."},
            {"id": "3", "text": "School uniforms make children equal."},  # replaces id 3
        ],
    )
    rep = idx.add([Source("perspectives", new)])
    assert rep.added == {"perspectives": 1} and rep.replaced == {"perspectives": 1}
    p = Perspect.open("tiny", home=built)
    assert p.pools["perspectives"] == 7
    assert p.retrieve("wind turbines birds").hits[0].id == "7"
    assert p.retrieve("children equal").hits[0].text == "School uniforms make children equal."
    assert all(h.text != "School uniforms reduce bullying." for h in p.retrieve("bullying").hits)
    rep = idx.delete("perspectives", ["7", "nope"])
    assert rep.deleted == {"perspectives": 1} and rep.not_found == {"perspectives": 1}
    p2 = Perspect.open("tiny", home=built)
    assert p2.pools["perspectives"] == 6
    assert all(h.id != "7" for h in p2.retrieve("wind turbines birds").hits)
    versions = built / "tiny" / "versions"
    # the first handle pins the version it read, so that version stays on disk ...
    assert len(list(versions.iterdir())) == 2
    # ... until its next search moves it to the newest version
    assert all(h.id != "7" for h in p.retrieve("wind turbines birds").hits)
    assert p.pools["perspectives"] == 6
    p.close()
    p2.close()
    idx.delete("perspectives", ["nope"])  # the next writer sweeps what no reader holds
    assert len(list(versions.iterdir())) == 1


def test_add_new_pool_to_existing_index(pools, home):
    Indexer("x", home=home).build([Source("perspectives", pools["perspectives"])])
    Indexer("x", home=home).add([Source("news", pools["news"])])
    assert Perspect.open("x", home=home).pools == {"perspectives": 6, "news": 5}


def test_bad_input_loses_nothing(built, tmp_path):
    before = Perspect.open("tiny", home=built)
    version = before.manifest["version"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "9", "text": "ok"}\n{not json}\n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2"):
        Indexer("tiny", home=built).add([Source("perspectives", bad)])
    with pytest.raises(InputError, match="empty"):
        (tmp_path / "empty.json").write_text("")
        Indexer("tiny", home=built).build([Source("perspectives", tmp_path / "empty.json")])
    after = Perspect.open("tiny", home=built)
    assert after.manifest["version"] == version and after.pools == before.pools
    assert after.retrieve("uniforms").hits


def test_skip_bad_indexes_the_good_records(built, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "9", "text": "Good record about tides"}\n{not json}\n')
    rep = Indexer("tiny", home=built, skip_bad=True).add([Source("perspectives", bad)])
    assert rep.skipped_bad == 1 and rep.added == {"perspectives": 1}


def test_missing_index_and_pool_errors(built):
    with pytest.raises(IndexNotFound, match="no index named 'nope'") as e:
        Perspect.open("nope", home=built)
    assert "tiny" in e.value.hint
    with pytest.raises(PerspectError, match="no news pool"):
        Indexer("t2", home=built).build([Source("perspectives", _pool_file(built))])
        Perspect.open("t2", home=built).retrieve("x", pool="news")


def _pool_file(home):
    p = home / "p.txt"
    p.write_text("a perspective\n")
    return p


@pytest.mark.parametrize("claim", ["", "   \n\t", "x" * 2001])
@pytest.mark.parametrize("method", ["search", "retrieve"])
def test_claim_validation(built, claim, method):
    with pytest.raises(PerspectError) as e:
        getattr(Perspect.open("tiny", home=built), method)(claim)
    assert "empty" in str(e.value) or "limit is 2,000" in str(e.value)


def test_writer_lock_refuses_a_second_writer(built, pools):
    d = IndexDir(built, "tiny")
    with d.writer_lock(), pytest.raises(IndexBusy):
        Indexer("tiny", home=built).add([Source("perspectives", pools["perspectives"])])


def test_query_syntax_is_not_parsed(built):
    hits = Perspect.open("tiny", home=built).retrieve('uniforms AND (NOT "students": [x TO y]').hits
    assert hits and hits[0].id in {"3", "5"}


def test_build_needs_perspectives(pools, home):
    with pytest.raises(PerspectError, match="needs a perspective pool"):
        Indexer("x", home=home).build([Source("evidence", pools["evidence"])])


def test_rebuild_replaces_content(built, tmp_path):
    p = tmp_path / "new.txt"
    p.write_text("only this one\n")
    Indexer("tiny", home=built).build([Source("perspectives", p)])
    got = Perspect.open("tiny", home=built)
    assert got.pools == {"perspectives": 1}
    assert (
        json.loads(
            (built / "tiny" / "versions" / got.manifest["version"] / "manifest.json").read_text()
        )["version"]
        == got.manifest["version"]
    )
