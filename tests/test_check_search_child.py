"""The pre-publish check search runs in a child process (perspect.indexer.check_search): a check
that crashes leaves the writer one line naming the retriever, and the live version untouched.

The crash is a real SIGSEGV in the child: a `sitecustomize` module on the PYTHONPATH of the
processes the test starts (Python's own start-up hook; no switch in Perspect) replaces BM25's
search with a read of address 0, as a native library reading a bad file does. The writer never
searches BM25 itself (a perspectives-only index has no links), so only the check meets it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from perspect.core.index.config import IndexConfig
from perspect.core.index.layout import IndexDir
from tests.conftest import PERSPECTIVES, perspect_cmd, run_cli, write_json


def start_hook(folder: Path, code: str) -> dict[str, str]:
    """The environment of a process whose Python runs `code` at start-up (sitecustomize)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(code, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


SEGFAULT_BM25 = """
import ctypes
from perspect.retriever.bm25 import TantivyBM25

def search(self, query, k):
    ctypes.string_at(0)  # SIGSEGV

TantivyBM25.search = search
"""


def test_a_check_that_crashes_is_one_line_and_the_live_version_stays(tmp_path):
    from perspect.indexer.indexer import Indexer, Source

    home = tmp_path / "home"
    Indexer("tiny", home=home, config=IndexConfig(("bm25",))).build(
        [Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES))]
    )
    live = IndexDir(home, "tiny").current_name()
    extra = write_json(tmp_path / "x.json", [{"id": "x1", "text": "Tidal power is reliable."}])
    r = subprocess.run(
        [*perspect_cmd(), "index", "add", "--name", "tiny", "--perspectives", str(extra),
         "--id-field", "id", "--home", str(home), "-q"],
        capture_output=True, text=True, timeout=300,
        env=start_hook(tmp_path / "hook", SEGFAULT_BM25),
    )  # fmt: skip
    assert r.returncode == 2, (r.returncode, r.stderr)
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "perspectives/bm25 crashed (SIGSEGV)" in errors[0]
    assert "live version is unchanged" in errors[0]
    assert "--retriever bm25" in r.stderr  # the hint: the command that rebuilds it
    assert IndexDir(home, "tiny").current_name() == live
    assert [v.name for v in (home / "tiny" / "versions").iterdir()] == [live]
    # the live version answers as before, without the item of the failed add
    got = run_cli("search", "tidal power", "--index", "tiny", "--home", str(home),
                  "--retrieval-only", "--json")  # fmt: skip
    ids = [h["id"] for h in json.loads(got.stdout)["hits"]]
    assert ids and "x1" not in ids


def test_a_healthy_check_publishes(tmp_path):
    from perspect.indexer.indexer import Indexer, Source

    home = tmp_path / "home"
    ix = Indexer("tiny", home=home, config=IndexConfig(("bm25",)))
    ix.build([Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES))])
    extra = write_json(tmp_path / "x.json", [{"id": "x1", "text": "Tidal power is reliable."}])
    rep = ix.add([Source("perspectives", extra, id_field="id")])
    assert rep.counts["perspectives"] == len(PERSPECTIVES) + 1
    assert IndexDir(home, "tiny").current_name() == rep.version
