"""`perspect serve`: a real uvicorn on a free port over a tiny index and tiny models the tests
make, a real http.server for the pages added as news; no mock of the HTTP stack."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from perspect.core.index.config import IndexConfig
from perspect.serve.config import ServeConfig
from tests.conftest import PERSPECTIVES, run_cli, write_json
from tests.test_news_search import _comparator
from tests.web_fixtures import (
    free_port,
    perspect_server,
    serve_process,
    static_server,
    wait_healthy,
    wait_ready,
    write_site,
)

pytestmark = pytest.mark.slow
CLAIM = "Animals feel pain and need legal protection"
LONG = "Animals feel pain and fear, and the law should protect them from cruelty. " * 4


@pytest.fixture
def index_home(tmp_path):
    from perspect.indexer.indexer import Indexer, Source

    home = tmp_path / "home"
    Indexer("tiny", home=home, config=IndexConfig(("bm25",))).build(
        [Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES))]
    )
    return home


@pytest.fixture
def server(index_home, tiny_pair_model, tiny_base, tmp_path, monkeypatch):
    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    cfg = ServeConfig(
        index="tiny",
        home=str(index_home),
        model=str(tiny_pair_model),
        port=free_port(),
        max_body_bytes=20_000,
        max_claim_chars=200,
        max_k=10,
        warm_fast=False,
    )
    with perspect_server(cfg) as url:
        yield url, index_home


def _one_line_error(r: httpx.Response, status: int) -> str:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) <= {"error", "id"} and "\n" not in body["error"] and body["error"]
    return body["error"]


def test_search_answers_as_the_cli_and_bad_requests_get_one_line(server, tiny_pair_model):
    from perspect.api import Perspect

    url, home = server
    with httpx.Client(base_url=url, timeout=60) as c:
        # a search sent before the models are loaded waits for them instead of failing
        r = c.post("/search", json={"claim": CLAIM, "k": 5})
        assert r.status_code == 200, r.text
        assert c.get("/ready").json()["ready"] is True
        got = r.json()
        assert r.headers["x-perspect-index-version"].startswith("v000001-")
        with Perspect.open("tiny", home=home, model=tiny_pair_model) as p:
            want = p.search(CLAIM, k=5).to_json()
        for key in ("schema", "claim", "coverage", "clusters", "news", "related"):
            assert got[key] == want[key], key
        hits = c.post("/search", json={"claim": CLAIM, "pool": "perspectives", "k": 3}).json()
        assert hits["schema"] == "perspect.hits/1" and 1 <= len(hits["hits"]) <= 3

        assert "malformed JSON" in _one_line_error(
            c.post("/search", content=b'{"claim": ', headers={"content-type": "application/json"}),
            400,
        )
        assert "claim" in _one_line_error(c.post("/search", json={"claim": 3}), 422)
        assert "claim" in _one_line_error(c.post("/search", json={}), 422)
        assert "Extra inputs" in _one_line_error(
            c.post("/search", json={"claim": CLAIM, "x": 1}), 422
        )
        assert "k must be in 1..10" in _one_line_error(
            c.post("/search", json={"claim": CLAIM, "k": 11}), 400
        )
        _one_line_error(c.post("/search", json={"claim": CLAIM, "k": 0}), 400)
        assert "longer than 200" in _one_line_error(
            c.post("/search", json={"claim": "x" * 201}), 400
        )
        _one_line_error(c.post("/search", json={"claim": "   "}), 400)
        _one_line_error(c.post("/search", json={"claim": CLAIM, "pool": "nope"}), 400)
        assert "over the limit" in _one_line_error(
            c.post("/search", json={"claim": "x" * 30_000}), 413
        )
        # a streamed body without a length is cut off at the limit too
        chunks = (b'{"claim": "' + b"x" * 5_000 for _ in range(6))
        _one_line_error(
            c.post("/search", content=chunks, headers={"content-type": "application/json"}), 413
        )
        assert "no index named 'nope'" in _one_line_error(
            c.post("/indexes/nope/news", json={"articles": ["http://127.0.0.1:1/"]}), 404
        )
        _one_line_error(c.post("/indexes/bad name!/news", json={"articles": []}), 400)
        _one_line_error(c.get("/nowhere"), 404)
        assert set(c.get("/openapi.json").json()["paths"]) >= {
            "/search",
            "/compare",
            "/indexes/{name}/news",
            "/indexes",
            "/health",
            "/ready",
        }
        listed = c.get("/indexes").json()
        assert listed["served"] == "tiny" and listed["indexes"][0]["pools"] == {"perspectives": 6}


class _Broken:
    """An engine that fails inside (a bug, a lost file): what a 500 is for."""

    def answer(self, *args, **kwargs):  # what a server asks of its engine's handle
        raise RuntimeError("something broke inside")

    def pinned(self):
        raise RuntimeError("something broke inside")


def test_a_failure_inside_is_a_500_with_a_logged_id(index_home, tiny_pair_model, caplog):
    from perspect.serve.app import create_app

    cfg = ServeConfig(
        index="tiny",
        home=str(index_home),
        model=str(tiny_pair_model),
        port=free_port(),
        warm_fast=False,
    )
    app = create_app(cfg)
    with perspect_server(cfg, app) as url:
        wait_ready(url)
        app.state.engines.slots["default"].handle = _Broken()
        with caplog.at_level("ERROR", logger="perspect.serve"):
            r = httpx.post(f"{url}/search", json={"claim": CLAIM}, timeout=30)
        eid = r.json().get("id")
        assert "internal error" in _one_line_error(r, 500) and eid in r.json()["error"]
        assert eid in caplog.text and "something broke inside" in caplog.text
        assert httpx.get(f"{url}/health").status_code == 200  # the process goes on


def test_a_search_past_its_budget_is_504(index_home, tiny_pair_model):
    cfg = ServeConfig(
        index="tiny",
        home=str(index_home),
        model=str(tiny_pair_model),
        port=free_port(),
        time_budget_s=0.001,
        warm_fast=False,
    )
    with perspect_server(cfg) as url:
        r = httpx.post(f"{url}/search", json={"claim": CLAIM}, timeout=30)
        assert "budget" in _one_line_error(r, 504)


def test_news_adds_are_serialised_and_readers_see_the_new_version(server, tmp_path):
    url, _ = server
    wait_ready(url)
    site = tmp_path / "site"
    paths = write_site(site)
    before = httpx.post(f"{url}/search", json={"claim": CLAIM}, timeout=60)
    old = before.headers["x-perspect-index-version"]
    seen: list[str] = []
    failures: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        with httpx.Client(base_url=url, timeout=60) as c:
            while not stop.is_set():
                r = c.post("/search", json={"claim": CLAIM, "k": 3})
                if r.status_code != 200:
                    failures.append(r.text)
                else:
                    seen.append(r.headers["x-perspect-index-version"])

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    with static_server(site) as base:
        bodies = [
            {"articles": [base + paths["animals"], base + paths["short"]]},
            {"articles": [{"title": "Reactors", "outlet": "Energy Post", "text": LONG}]},
        ]
        results: list[httpx.Response] = []

        def post(body) -> None:
            results.append(httpx.post(f"{url}/indexes/tiny/news", json=body, timeout=120))

        writers = [threading.Thread(target=post, args=(b,)) for b in bodies]
        for t in writers:
            t.start()
        for t in writers:
            t.join()
    time.sleep(0.5)
    stop.set()
    for t in readers:
        t.join()
    assert [r.status_code for r in results] == [200, 200], [r.text for r in results]
    reports = [r.json() for r in results]
    assert sorted(rep["added"] for rep in reports) == [1, 1]
    short = next(x for rep in reports for x in rep["results"] if x["status"] == "empty")
    assert short["input"].endswith("/short.html")
    assert not failures, failures[:3]
    after = httpx.post(f"{url}/search", json={"claim": CLAIM}, timeout=60)
    new = after.headers["x-perspect-index-version"]
    assert new.startswith("v000003-")  # two adds, none lost
    assert set(seen) <= {old, *(rep["version"] for rep in reports)} and old in seen
    pools = httpx.get(f"{url}/indexes").json()["indexes"][0]["pools"]
    assert pools["news"] == sum(rep["sentences"] for rep in reports)


def test_compare_answers_as_the_cli(server):
    url, _ = server
    a = {
        "title": "Council backs shelters",
        "text": "The council approved new funding. Adoptions rose.",
    }
    b = {"title": "Shelters struggle", "text": "Shelters are underfunded. Adoptions fell."}
    r = httpx.post(f"{url}/compare", json={"a": a, "b": b}, timeout=120)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["schema"] == "perspect.compare/1" and got["a"]["title"] == "Council backs shelters"
    assert got["a"]["sentences"] == 2 and got["agreement"]
    bad = httpx.post(f"{url}/compare", json={"a": a, "b": {"text": "   "}}, timeout=60)
    assert "no sentences" in _one_line_error(bad, 400)


def test_cli_serve_refuses_an_unknown_index_and_serves_a_real_one(index_home, tiny_pair_model):
    r = run_cli("serve", "--index", "nope", "--home", str(index_home), ok=False)
    assert r.returncode == 2 and "no index named 'nope'" in r.stderr and "Traceback" not in r.stderr
    with serve_process(index_home, tiny_pair_model) as (proc, url):
        wait_healthy(url, lambda: proc.poll() is None, timeout=60)
        got = httpx.post(f"{url}/search", json={"claim": CLAIM}, timeout=60)
        assert got.status_code == 200 and json.loads(got.text)["schema"] == "perspect.result/1"


def _pids_ready(url: str, want: int, timeout: float = 90, exclude=()) -> set[int]:
    """Pids of `want` distinct workers that answer /ready (each poll on a new connection)."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(seen) < want:
        assert time.monotonic() < deadline, f"only {seen} ready"
        try:
            r = httpx.get(f"{url}/ready", headers={"Connection": "close"}, timeout=5)
            if r.status_code == 200 and r.json()["pid"] not in exclude:
                seen.add(r.json()["pid"])
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return seen


def test_workers_share_the_port_and_a_killed_one_is_replaced(index_home, tiny_pair_model):
    import os
    import signal

    with serve_process(index_home, tiny_pair_model, "--workers", "2") as (_, url):
        pids = _pids_ready(url, 2)
        victim = min(pids)
        os.kill(victim, signal.SIGKILL)
        # the survivor keeps answering; uvicorn's supervisor starts a replacement
        got = httpx.post(f"{url}/search", json={"claim": CLAIM}, timeout=60)
        assert got.status_code == 200
        new = _pids_ready(url, 1, exclude=pids)
        assert new and victim not in new


def test_a_search_job_reports_its_stage_answers_as_search_and_can_be_cancelled(server):
    """The page's way in: POST /searches answers at once with a job; GET follows it to `done`
    with the answer POST /search gives; DELETE of a running job ends it `cancelled`; an unknown
    id is a 404 (one line)."""
    url, _ = server
    wait_ready(url)
    with httpx.Client(base_url=url, timeout=60) as c:
        r = c.post("/searches", json={"claim": CLAIM})
        assert r.status_code == 202, r.text
        job = r.json()
        assert job["state"] in ("queued", "running") and len(job["id"]) == 16
        seen, deadline = set(), time.monotonic() + 120
        while job["state"] in ("queued", "running") and time.monotonic() < deadline:
            job = c.get(f"/searches/{job['id']}").json()
            seen.add(job["stage"])
            time.sleep(0.02)
        assert job["state"] == "done", job
        direct = c.post("/search", json={"claim": CLAIM}).json()
        ids = [cl["representative"]["id"] for cl in job["result"]["clusters"]]
        assert ids == [cl["representative"]["id"] for cl in direct["clusters"]]
        assert seen - {None}, "no stage was ever reported"

        job = c.post("/searches", json={"claim": "Zoos should be closed, as cruel places"}).json()
        stopped = c.delete(f"/searches/{job['id']}").json()
        assert stopped["id"] == job["id"]
        deadline = time.monotonic() + 120
        while stopped["state"] in ("queued", "running") and time.monotonic() < deadline:
            stopped = c.get(f"/searches/{job['id']}").json()
            time.sleep(0.02)
        assert stopped["state"] in ("cancelled", "done"), stopped  # done: it ended first
        assert c.post("/searches", json={"claim": " "}).status_code == 400
        r = c.get("/searches/0123456789abcdef")
        assert r.status_code == 404 and set(r.json()) == {"error"}


def test_corrections_over_http_are_the_clis(server):
    """POST /indexes/{name}/corrections stores what `perspect correct` stores (GET lists it, a
    search applies it) and `undo` takes it back; a body naming neither a side nor a pair is a
    422 (the description says so), an unknown perspective or index a 404."""
    url, _ = server
    wait_ready(url)
    with httpx.Client(base_url=url, timeout=60) as c:
        first = c.post("/search", json={"claim": CLAIM}).json()["clusters"][0]
        pid = first["representative"]["id"]
        side = "oppose" if first["stance"] == "support" else "support"
        r = c.post("/indexes/tiny/corrections", json={"claim": CLAIM, "perspective": pid,
                                                      "side": side})  # fmt: skip
        assert r.status_code == 200 and r.json()["changed"], r.text
        listed = c.get("/indexes/tiny/corrections").json()["corrections"]
        assert any(x.get("perspective") == pid for x in listed), listed
        after = c.post("/search", json={"claim": CLAIM}).json()["clusters"]
        moved = next(cl for cl in after if cl["representative"]["id"] == pid)
        assert moved["stance"] == side and any(m["corrected"] for m in moved["members"])
        r = c.post("/indexes/tiny/corrections", json={"claim": CLAIM, "perspective": pid,
                                                      "side": side, "undo": True})  # fmt: skip
        assert r.status_code == 200 and r.json()["changed"]
        assert c.get("/indexes/tiny/corrections").json()["corrections"] == []
        r = c.post("/indexes/tiny/corrections", json={"claim": CLAIM})  # neither a side nor a pair
        assert r.status_code == 422 and set(r.json()) == {"error"}, r.text
        r = c.post("/indexes/tiny/corrections", json={"claim": CLAIM, "perspective": "no-such",
                                                      "side": "oppose"})  # fmt: skip
        assert r.status_code == 404 and "no perspective" in r.json()["error"]
        r = c.post("/indexes/nope/corrections", json={"claim": CLAIM, "same": ["1", "2"]})
        assert r.status_code == 404 and set(r.json()) == {"error"}
