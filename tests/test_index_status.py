"""`perspect index status` with one damaged index among others: every index is listed, the
damaged one marked as damaged (its error and fix), and the command exits 2 once it has printed
the whole list."""

from __future__ import annotations

import json

from perspect.core.index.config import IndexConfig
from perspect.core.index.layout import IndexDir
from tests.conftest import PERSPECTIVES, run_cli, write_json


def _two_indexes(tmp_path):
    from perspect.indexer.indexer import Indexer, Source

    home = tmp_path / "home"
    src = [Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES))]
    for name in ("good", "hurt"):
        Indexer(name, home=home, config=IndexConfig(("bm25",))).build(src)
    manifest = IndexDir(home, "hurt").current() / "manifest.json"
    manifest.write_text(manifest.read_text()[:100])  # cut short: no longer JSON
    return home


def test_status_lists_every_index_and_marks_the_damaged_one(tmp_path):
    from perspect import api

    home = _two_indexes(tmp_path)
    _, rows = api.index_status(None, home)
    assert [r["name"] for r in rows] == ["good", "hurt"]
    assert rows[0]["pools"]["perspectives"]["count"] == len(PERSPECTIVES)
    assert "damaged" not in rows[0] and "index 'hurt' is damaged" in rows[1]["damaged"]
    assert "perspect index build --name hurt" in rows[1]["hint"]

    as_json = run_cli("index", "status", "--json", "--home", str(home), ok=False)
    assert as_json.returncode == 2
    listed = {r["name"]: r for r in json.loads(as_json.stdout)["indexes"]}
    assert set(listed) == {"good", "hurt"} and listed["good"]["version"].startswith("v000001-")
    assert "cannot read" in listed["hurt"]["damaged"]

    table = run_cli("index", "status", "--home", str(home), ok=False)
    assert table.returncode == 2 and "Traceback" not in table.stderr
    assert "good" in table.stdout and "hurt" in table.stdout and "damaged" in table.stdout
    errors = [ln for ln in table.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "'hurt'" in errors[0]

    # the healthy one alone: exit 0; the damaged one by name: listed as damaged, exit 2
    assert run_cli("index", "status", "--name", "good", "--home", str(home)).returncode == 0
    one = run_cli("index", "status", "--name", "hurt", "--json", "--home", str(home), ok=False)
    assert one.returncode == 2 and json.loads(one.stdout)["indexes"][0]["name"] == "hurt"
    unknown = run_cli("index", "status", "--name", "nope", "--home", str(home), ok=False)
    assert unknown.returncode == 2 and "no index named 'nope'" in unknown.stderr


def test_an_index_copied_to_another_folder_is_listed_under_that_folder(tmp_path):
    """The folder's name is the one every command opens an index by; its manifest keeps the name
    it was built under, which status listed before (a copy showed up as its original)."""
    import shutil

    from perspect import api
    from perspect.indexer.indexer import Indexer, Source

    home = tmp_path / "home"
    src = [Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES))]
    Indexer("first", home=home, config=IndexConfig(("bm25",))).build(src)
    shutil.copytree(home / "first", home / "second")
    _, rows = api.index_status(None, home)
    assert [r["name"] for r in rows] == ["first", "second"]
    assert rows[0]["version"] == rows[1]["version"]  # the same index, two names
    table = run_cli("index", "status", "--name", "second", "--json", "--home", str(home))
    assert json.loads(table.stdout)["indexes"][0]["name"] == "second"
