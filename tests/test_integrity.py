"""Damaged or crafted index files are refused before a library reads them, in one line.

Each kind of file of an index with all three retrievers (BM25, dense, ColBERT in exact mode and
on PLAID) is garbled in a copy of the index; the next search must name the index, the file and
the command that repairs it, and must never crash, run code, or answer from the damaged file.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
from pathlib import Path

import pytest

from perspect import Perspect
from perspect.core.errors import IndexDamaged
from perspect.core.index import manifest as mf
from perspect.core.index.config import IndexConfig
from perspect.core.index.layout import IndexDir
from perspect.indexer.indexer import Indexer, Source

from .conftest import EVIDENCE, PERSPECTIVES, perspect_cmd, write_json
from .test_check_search_child import start_hook

pytestmark = [pytest.mark.plaid, pytest.mark.slow]

WORDS = "law tax school energy wind health vote court police rights market climate".split()


def _config(model: Path, min_plaid_docs: int = 1000) -> IndexConfig:
    return IndexConfig(
        retrievers=("bm25", "dense", "colbert"),
        backends={
            "colbert": {
                "model": str(model),
                "doc_maxlen": 32,
                "query_maxlen": 16,
                "kmeans_niters": 2,
                "min_plaid_docs": min_plaid_docs,
            }
        },
    )


@pytest.fixture(scope="module")
def indexes(tiny_colbert, tmp_path_factory):
    """`small` (ColBERT exact, with evidence and links) and `plaid` (60 items on PLAID)."""
    import random

    d = tmp_path_factory.mktemp("integrity")
    home = d / "home"
    Indexer("small", home=home, config=_config(tiny_colbert)).build(
        [
            Source("perspectives", write_json(d / "p.json", PERSPECTIVES)),
            Source("evidence", write_json(d / "e.json", EVIDENCE)),
        ]
    )
    rnd = random.Random(5)
    docs = [
        {"id": f"s{i}", "text": " ".join(rnd.choice(WORDS) for _ in range(9)) + f" n{i}"}
        for i in range(60)
    ]
    Indexer("plaid", home=home, config=_config(tiny_colbert, 40)).build(
        [Source("perspectives", write_json(d / "big.json", docs), id_field="id")]
    )
    return home


def _copy(indexes: Path, tmp_path: Path) -> Path:
    home = tmp_path / "home"
    shutil.copytree(indexes, home)
    return home


def _garble(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif how == "4k":  # 4 KB of noise in the middle (or all of a small file)
        start = max(0, len(data) // 2 - 2048)
        for i in range(start, min(len(data), start + 4096)):
            data[i] ^= 0x5A
        path.write_bytes(bytes(data))
    else:  # one flipped byte
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))


def _version(home: Path, name: str) -> Path:
    return IndexDir(home, name).current()


CASES = [
    ("small", "perspectives/bm25/*.idx", "byte", "bm25"),
    ("small", "perspectives/bm25/meta.json", "byte", "bm25"),
    ("small", "perspectives/dense/ids.json", "byte", "dense"),
    ("small", "perspectives/dense/vectors.faiss", "4k", "dense"),
    ("small", "perspectives/items.sqlite", "4k", None),
    ("small", "links.sqlite", "4k", "bm25"),
    ("small", "perspectives/colbert/exact.pt", "byte", "colbert"),
    ("small", "perspectives/colbert/perspect_colbert.json", "byte", "colbert"),
    ("plaid", "perspectives/colbert/plaid/ivf.pid.pt", "4k", "colbert"),
    ("plaid", "perspectives/colbert/plaid/centroids.pt", "truncate", "colbert"),
    ("plaid", "perspectives/colbert/plaid/0.codes.pt", "byte", "colbert"),
    ("plaid", "perspectives/colbert/plaid_ids.json", "byte", "colbert"),
]


@pytest.mark.parametrize(("name", "pattern", "how", "kind"), CASES)
def test_a_garbled_file_is_one_line_naming_it_and_the_fix(
    indexes, tmp_path, name, pattern, how, kind
):
    home = _copy(indexes, tmp_path)
    version = _version(home, name)
    target = sorted(version.glob(pattern))[0]
    _garble(target, how)
    pool = "perspectives"
    with Perspect.open(name, home=home) as p, pytest.raises(IndexDamaged) as e:
        if pattern == "links.sqlite":
            p._searcher.links()
        for r in ("bm25", "dense", "colbert"):
            p.retrieve("school uniforms bullying law", pool=pool, retriever=r)
    rel = target.relative_to(version).as_posix()
    assert f"index {name!r}" in e.value.message and rel in e.value.message
    if kind:
        assert f"perspect index rebuild --name {name} --retriever {kind}" in e.value.hint
    else:
        assert f"perspect index build --name {name}" in e.value.hint
    # a write refuses to carry the damage into the next version
    with pytest.raises(IndexDamaged):
        Indexer(name, home=home).delete(pool, ["s1", "1"])


@pytest.mark.parametrize(("name", "pattern"), [("plaid", "perspectives/colbert/plaid/ivf.pid.pt"),
                                                ("small", "perspectives/dense/vectors.faiss")])  # fmt: skip
def test_cli_search_on_a_damaged_file_is_one_line(indexes, tmp_path, name, pattern):
    """The files whose damage segfaulted (PLAID) or answered silently (faiss)."""
    home = _copy(indexes, tmp_path)
    _garble(sorted(_version(home, name).glob(pattern))[0], "4k")
    r = subprocess.run(
        [*perspect_cmd(), "search", "law tax", "--index", name, "--home", str(home),
         "--pool", "perspectives"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "is damaged" in r.stderr
    assert "perspect index rebuild" in r.stderr


@pytest.mark.parametrize(
    ("name", "rel", "kind"),
    [("plaid", "perspectives/colbert/plaid/ivf.pid.pt", "colbert"),
     ("small", "links.sqlite", "bm25")],
)  # fmt: skip
def test_the_rebuild_named_in_the_error_repairs_it(indexes, tmp_path, name, rel, kind):
    home = _copy(indexes, tmp_path)
    _garble(_version(home, name) / rel, "4k")
    Indexer(name, home=home).rebuild(kind)
    query = "law tax" if name == "plaid" else "school uniforms bullying"
    with Perspect.open(name, home=home) as p:
        assert p.retrieve(query, retriever=kind).hits
        if name == "small":
            assert p._searcher.links().get(["1"])["1"]


@pytest.mark.parametrize("edit", ["valid-json", "bytes"])
def test_a_damaged_manifest_is_one_line(indexes, tmp_path, edit):
    home = _copy(indexes, tmp_path)
    path = _version(home, "small") / "manifest.json"
    if edit == "valid-json":  # still JSON, still the format: only its checksum tells
        m = json.loads(path.read_text())
        m["pools"]["perspectives"]["count"] = 7
        path.write_text(json.dumps(m))
    else:
        _garble(path, "4k")
    with pytest.raises(IndexDamaged, match=r"index .small. is damaged: .*manifest\.json") as e:
        Perspect.open("small", home=home)
    assert "perspect index build --name small" in e.value.hint
    r = subprocess.run(
        [*perspect_cmd(), "search", "law", "--index", "small", "--home", str(home)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2 and "Traceback" not in r.stderr and "manifest.json" in r.stderr


class _Boom:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_a_planted_pickle_never_runs(indexes, tmp_path):
    """PyLate's id-map pickle is neither written nor read; a crafted one (or a crafted exact.pt,
    even re-sealed with matching checksums) runs nothing."""
    home = _copy(indexes, tmp_path)
    marker = tmp_path / "ran"
    version = _version(home, "plaid")
    payload = pickle.dumps(_Boom(marker))
    for name in ("documents_ids_to_plaid_ids.pkl", "plaid_ids_to_documents_ids.pkl"):
        (version / "perspectives/colbert/plaid" / name).write_bytes(payload)
    with Perspect.open("plaid", home=home) as p:
        assert p.retrieve("law tax", retriever="colbert").hits  # extra files are never read
    assert not marker.exists()
    # a crafted exact.pt whose checksum was re-recorded: torch refuses it (weights_only)
    small = _version(home, "small")
    (small / "perspectives/colbert/exact.pt").write_bytes(payload)
    mf.seal(small)
    with Perspect.open("small", home=home) as p, pytest.raises(IndexDamaged, match=r"exact\.pt"):
        p.retrieve("law tax", retriever="colbert")
    assert not marker.exists()
    # an older Perspect's PLAID index (pickled id map, no JSON one) is refused with the fix
    (version / "perspectives/colbert/plaid_ids.json").unlink()
    mf.seal(version)
    with Perspect.open("plaid", home=home) as p, pytest.raises(IndexDamaged) as e:
        p.retrieve("law tax", retriever="colbert")
    assert "pickle" in e.value.message
    assert "perspect index rebuild --name plaid --retriever colbert" in e.value.hint
    assert not marker.exists()
    Indexer("plaid", home=home).rebuild("colbert")
    with Perspect.open("plaid", home=home) as p:
        assert p.retrieve("law tax", retriever="colbert").hits
    assert not marker.exists() and not list(_version(home, "plaid").rglob("*.pkl"))


def test_an_index_without_checksums_is_checksummed_at_first_open(indexes, tmp_path, capfd):
    home = _copy(indexes, tmp_path)
    version = _version(home, "small")
    m = json.loads((version / "manifest.json").read_text())
    for key in ("files", "checksum", "integrity"):
        m.pop(key)
    (version / "manifest.json").write_text(json.dumps(m))  # as an older Perspect wrote it
    with Perspect.open("small", home=home) as p:
        assert p.retrieve("school uniforms bullying").hits[0].id == "3"
    assert "without file checksums; recorded them now" in capfd.readouterr().err
    sealed = json.loads((version / "manifest.json").read_text())
    assert "perspectives/dense/vectors.faiss" in sealed["files"] and sealed["checksum"]
    _garble(version / "perspectives/dense/vectors.faiss", "4k")
    r = subprocess.run(
        [*perspect_cmd(), "search", "law", "--index", "small", "--home", str(home)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 2 and "vectors.faiss" in r.stderr and "Traceback" not in r.stderr


def test_a_write_that_fails_its_check_search_is_not_published(indexes, tmp_path, monkeypatch):
    home = _copy(indexes, tmp_path)
    before = IndexDir(home, "plaid").current_name()
    # the check search runs in a child process (indexer.check_search): break ColBERT's search
    # there, through Python's start-up hook on the child's PYTHONPATH
    hook = "from perspect.retriever.colbert import ColBERTBackend\n\n"
    hook += "def broken(self, query, k):\n    raise RuntimeError('invalid centroid code')\n\n"
    hook += "ColBERTBackend.search = broken\n"
    monkeypatch.setenv("PYTHONPATH", start_hook(tmp_path / "hook", hook)["PYTHONPATH"])
    extra = write_json(tmp_path / "x.json", [{"id": "x1", "text": "tidal power is reliable"}])
    with pytest.raises(IndexDamaged, match=r"failed its check search.*live version is unchanged"):
        Indexer("plaid", home=home).add([Source("perspectives", extra, id_field="id")])
    assert IndexDir(home, "plaid").current_name() == before
    assert len(list((home / "plaid" / "versions").iterdir())) == 1
