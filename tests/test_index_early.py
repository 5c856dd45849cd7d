"""Searchable early (issue 62, indexer.pending): a build publishes a version a search answers on
as soon as the perspectives are indexed, then the complete one. Driven as users drive it: the
CLI's `index build --pending`, `index status`, `index complete`; the shipped models searching
both versions; a crash while completing."""

from __future__ import annotations

import pytest

from perspect import api
from perspect.api import Perspect, Source
from perspect.core.index.layout import IndexDir
from tests.conftest import run_cli, write_json
from tests.test_shipped_bundle import CLAIM, EVIDENCE, MODELS, POOL

RETRIEVERS = "bm25,dense"


@pytest.fixture
def pool_files(tmp_path, monkeypatch):
    monkeypatch.setenv("PERSPECT_MODELS", str(MODELS))
    monkeypatch.setenv("PERSPECT_MODEL", str(MODELS / "pair"))  # the CLI's too: the bundle's
    pf = write_json(tmp_path / "p.json", [{"id": i, "text": t} for i, t, _ in POOL])
    ef = write_json(tmp_path / "e.json", [{"id": i, "text": t} for i, t in EVIDENCE])
    return tmp_path / "home", pf, ef


def _answer(home, name: str) -> dict[str, str]:
    """perspective id -> the side of its cluster, as the shipped models answer CLAIM."""
    with Perspect.open(name, home=home, model=MODELS / "pair") as p:
        res = p.search(CLAIM)
    return {m.id: c.stance for c in res.clusters for m in c.members}


def test_the_cli_publishes_a_searchable_version_first_and_completes_it(pool_files):
    home, pf, ef = pool_files
    h = ["--home", str(home)]
    r = run_cli("index", "build", "--name", "early", "--retrievers", RETRIEVERS,
                "--perspectives", str(pf), "--evidence", str(ef), "--pending", *h)  # fmt: skip
    assert "searchable" in r.stdout and "perspect index complete --name early" in r.stdout
    status = run_cli("index", "status", "--name", "early", *h).stdout
    assert "pending: evidence/dense" in status and "links (dense)" in status
    first = IndexDir(home, "early").current().name
    early = _answer(home, "early")  # the first version answers, with the shipped models
    assert early

    done = run_cli("index", "complete", "--name", "early", *h)
    assert "is complete" in done.stdout
    # its last stage keeps every perspective's lower states beside the versions: a claim's
    # first search then computes none (indexer.states.keep_perspectives)
    from perspect.core.index.kept_states import KeptStates
    from perspect.reranker import factory

    key = factory.load(["trunk"], factory.WRITER).trunk.states_key
    assert KeptStates(home / "early").missing(key, [t for _, t, _ in POOL]) == []
    assert IndexDir(home, "early").current().name != first
    assert "pending" not in run_cli("index", "status", "--name", "early", *h).stdout
    _, rows = api.index_status("early", home)
    assert "pending" not in rows[0] and rows[0]["pools"]["evidence"]["retrievers"] == [
        "bm25",
        "dense",
    ]
    assert rows[0]["links"]["retrievers"] == ["bm25", "dense"]
    # the perspectives and their sides are the complete index's from the first answer on: a
    # search reads the perspectives through the same retrievers in both versions
    assert _answer(home, "early") == early
    again = run_cli("index", "complete", "--name", "early", *h)
    assert "nothing was pending" in again.stdout


def test_a_crash_while_completing_leaves_the_searchable_version_and_a_later_run_finishes(
    pool_files,
):
    home, pf, ef = pool_files
    sources = [Source("perspectives", pf), Source("evidence", ef)]
    config = api.index_config(RETRIEVERS.split(","))

    class Crash(Exception):
        pass

    said: list = []

    class Crashing:
        def stage(self, name, total=None):
            if name.startswith("indexing evidence (dense)"):
                said.append(api.index_status("c", home)[1][0].get("completing"))  # how far
                raise Crash(name)
            from perspect.core.progress import NullReporter

            return NullReporter().stage(name, total)

    seen: list[str] = []
    with pytest.raises(Crash):
        api.build_index("c", sources, home=home, config=config, reporter=Crashing(),
                        on_searchable=seen.append)  # fmt: skip
    live = IndexDir(home, "c").current()
    assert seen == [live.name]  # the first version is live, still pending
    _, rows = api.index_status("c", home)
    assert rows[0]["pending"]["work"][0] == "evidence/dense"
    # while it ran, `index status` said which stage of how many items; nothing says so after
    assert said[0]["stage"] == "indexing evidence (dense)" and said[0]["total"] == len(EVIDENCE)
    assert "completing" not in rows[0]
    assert [p.name for p in (home / "c" / "versions").iterdir()] == [live.name]  # none half-made
    assert _answer(home, "c")
    assert api.complete_index("c", home=home)["version"] != live.name
    _, rows = api.index_status("c", home)
    assert "pending" not in rows[0]


def test_what_is_added_while_pending_is_in_the_complete_version(pool_files):
    """An add to the searchable version lands in its backends; the completion then builds the
    late ones from every stored item, the added ones too."""
    from perspect.retriever.searcher import Searcher

    home, pf, ef = pool_files
    config = api.index_config(RETRIEVERS.split(","))
    api.build_index("a", [Source("perspectives", pf), Source("evidence", ef)], home=home,
                    config=config, leave_pending=True)  # fmt: skip
    more = write_json(home.parent / "more.json", [{"id": "e-new", "text": "Zoo cages are small."}])
    api.add_to_index("a", [Source("evidence", more)], home=home)
    _, rows = api.index_status("a", home)
    assert rows[0]["pending"] and rows[0]["pools"]["evidence"]["count"] == len(EVIDENCE) + 1
    api.complete_index("a", home=home)
    s = Searcher("a", home=home)
    try:
        dense = s.vector_backend("evidence")
        assert dense is not None and dense.vectors(["e-new"]).any()  # encoded by the completion
        assert (
            s.search("Zoo cages are small.", "evidence", 1, retriever="dense").hits[0].id == "e-new"
        )
    finally:
        s.close()
