"""The dense backend past `ann_min`: a commit makes its faiss index IVF-Flat (retriever/ann.py).

Real faiss on tiny pools: `ann_min` is set to 300 vectors so the switch, recall against an exact
scan, add/delete by id after it, reopening and a crash mid-commit are exercised in seconds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from perspect.core.index.config import IndexConfig
from perspect.indexer.indexer import Indexer, Source
from perspect.retriever import ann
from perspect.retriever.dense import IDS, VECTORS, DenseBackend
from perspect.retriever.searcher import Searcher
from tests.conftest import write_json

DIM = 32
CFG = {"ann_min": 300, "nprobe": 4}  # 4 of the 10 lists a 400-vector pool gets: approximate


def clustered(n: int, seed: int = 0, centres: int = 40) -> np.ndarray:
    """Unit vectors around `centres` topics, like sentences of a few dozen stories."""
    rng = np.random.default_rng(seed)
    c = np.random.default_rng(99).normal(size=(centres, DIM))
    v = c[rng.integers(0, centres, n)] + rng.normal(0, 0.35, (n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def exact_top(ids: list[str], vecs: np.ndarray, q: np.ndarray, k: int) -> list[list[str]]:
    order = np.argsort(-(q @ vecs.T), axis=1)[:, :k]
    return [[ids[j] for j in row] for row in order]


def recall_at(b: DenseBackend, ids: list[str], vecs: np.ndarray, q: np.ndarray, k=10) -> float:
    got = b.search_vectors(q, k)
    want = exact_top(ids, vecs, q, k)
    return float(
        np.mean([len({i for i, _ in g} & set(w)) / k for g, w in zip(got, want, strict=True)])
    )


def saved_kind(folder) -> str:
    return json.loads((folder / IDS).read_text())["config"]["index_kind"]


@pytest.fixture
def pool(tmp_path):
    vecs = clustered(400)
    ids = [f"n{i}" for i in range(400)]
    b = DenseBackend.create(tmp_path / "dense", CFG)
    b.add_encoded(ids[:200], vecs[:200])
    b.commit()
    return b, ids, vecs


def test_switches_to_ivf_past_ann_min_and_agrees_with_flat(pool):
    b, ids, vecs = pool
    assert b.index_kind == ann.FLAT and saved_kind(b.folder) == ann.FLAT
    b.add_encoded(ids[200:], vecs[200:])
    assert b.index_kind == ann.FLAT  # adds stay in memory; the commit decides
    b.commit()
    assert b.index_kind == ann.IVF and saved_kind(b.folder) == ann.IVF
    assert b.count() == 400 and b.index.nprobe == 4 and b.index.nlist == ann.nlist_for(400)
    q = clustered(60, seed=5)
    assert recall_at(b, ids, vecs, q) >= 0.9
    assert np.allclose(b.vectors(["n7", "missing"])[0], vecs[7]) and not b.vectors(["x"]).any()
    r = DenseBackend.open(b.folder, {})  # reopen after close reads the IVF index and its config
    assert r.index_kind == ann.IVF and r.count() == 400 and r.config["ann_min"] == 300
    assert r.search_vectors(q, 10) == b.search_vectors(q, 10)
    assert not list(b.folder.glob(".*tmp*"))


def test_add_and_delete_by_id_after_the_switch(pool):
    b, ids, vecs = pool
    b.add_encoded(ids[200:], vecs[200:])
    b.commit()
    trained = b.config["ann_trained_on"]
    gone = ["n3", "n250", "n399"]
    b.delete(gone)
    new = clustered(30, seed=11)
    b.add_encoded([f"m{i}" for i in range(30)], new)  # into the trained lists: no retraining
    b.commit()
    assert b.index_kind == ann.IVF and b.config["ann_trained_on"] == trained
    r = DenseBackend.open(b.folder, {}, writable=True)
    assert r.count() == 427
    hits = r.search_vectors(np.concatenate([vecs[[3, 250, 399]], new[:5]]), 10)
    assert all(not {i for i, _ in h} & set(gone) for h in hits)
    assert [h[0][0] for h in hits[3:]] == [f"m{i}" for i in range(5)]
    r.add_encoded(["z"], clustered(1, seed=12))  # a second add, after reopening
    r.delete(["m0"])
    r.commit()
    again = DenseBackend.open(b.folder, {})
    assert again.count() == 427 and again.vectors(["z"]).any() and not again.vectors(["m0"]).any()
    keep = [i for i in ids if i not in gone] + [f"m{i}" for i in range(1, 30)] + ["z"]
    kept = again.vectors(keep)
    assert recall_at(again, keep, kept, clustered(60, seed=5)) >= 0.9


def test_back_to_flat_under_half_ann_min(pool):
    b, ids, vecs = pool
    b.add_encoded(ids[200:], vecs[200:])
    b.commit()
    b.delete(ids[:260])
    b.commit()
    assert b.index_kind == ann.FLAT and b.count() == 140
    assert recall_at(b, ids[260:], vecs[260:], clustered(20, seed=3)) == 1.0  # exact again


@pytest.mark.parametrize("where", ["build", "write"])
def test_a_crash_mid_commit_leaves_the_previous_commit(pool, monkeypatch, where):
    import faiss

    b, ids, vecs = pool
    q = clustered(10, seed=5)
    before = b.search_vectors(q, 10)
    files = {p.name: p.read_bytes() for p in (b.folder / VECTORS, b.folder / IDS)}
    if where == "build":
        monkeypatch.setattr(ann, "build", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    else:  # the IVF is written to its temporary file, then the process dies before the rename
        real = faiss.write_index

        def dies_after_writing(index, path):
            real(index, path)
            raise OSError("killed")

        monkeypatch.setattr(faiss, "write_index", dies_after_writing)
    b.add_encoded(ids[200:], vecs[200:])
    with pytest.raises((MemoryError, OSError)):
        b.commit()
    assert {p.name: p.read_bytes() for p in (b.folder / VECTORS, b.folder / IDS)} == files
    assert not list(b.folder.glob(".*tmp*"))
    r = DenseBackend.open(b.folder, {}, writable=True)
    assert r.index_kind == ann.FLAT and r.count() == 200
    assert r.search_vectors(q, 10) == before
    monkeypatch.undo()
    r.add_encoded(ids[200:], vecs[200:])  # the next writer finishes the job
    r.commit()
    assert DenseBackend.open(b.folder, {}).index_kind == ann.IVF


@pytest.mark.slow
def test_index_switches_through_the_indexer_and_survives_a_failed_add(home, tmp_path, monkeypatch):
    """The real write path: encoder, copy-on-write versions, the indexer's check search."""
    topics = ["wind turbines", "school uniforms", "nuclear reactors", "animal rights", "zoos"]
    rows = [
        {"pId": i, "text": f"Claim {i}: {topics[i % 5]} matter for reason number {i}."}
        for i in range(330)
    ]
    cfg = IndexConfig(("bm25", "dense"), backends={"dense": {"ann_min": 300}}, links=False)
    Indexer("a", home=home, config=cfg).build(
        [Source("perspectives", write_json(tmp_path / "p1.json", rows[:250]))]
    )
    q = "renewable electricity from wind turbines"
    first = Searcher("a", home=home).search(q, "perspectives", 5, retriever="dense")
    monkeypatch.setattr(ann, "build", lambda *a, **k: (_ for _ in ()).throw(MemoryError()))
    more = write_json(tmp_path / "p2.json", rows[250:])
    with pytest.raises(MemoryError):
        Indexer("a", home=home).add([Source("perspectives", more)])
    s = Searcher("a", home=home)  # the live version is the previous one, searchable
    assert s.backend("perspectives", "dense").count() == 250
    assert s.search(q, "perspectives", 5, retriever="dense").hits == first.hits
    monkeypatch.undo()
    Indexer("a", home=home).add([Source("perspectives", more)])
    s = Searcher("a", home=home)
    b = s.backend("perspectives", "dense")
    assert b.count() == 330 and b.index_kind == ann.IVF
    hits = s.search(q, "perspectives", 5, retriever="dense").hits
    assert all("wind" in s.store("perspectives").get(h.id).text for h in hits)
    Indexer("a", home=home).delete("perspectives", [hits[0].id])
    s = Searcher("a", home=home)
    assert hits[0].id not in [h.id for h in s.search(q, "perspectives", 5, retriever="dense").hits]
    assert s.backend("perspectives", "dense").index_kind == ann.IVF
