"""`perspect news add` within its time budgets, fetching nothing it already holds: a local server
(real sockets) that logs every GET, drips a page a byte at a time, or never answers."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from perspect.core.index.layout import IndexDir
from perspect.core.index.store import ItemStore
from tests.conftest import perspect_cmd
from tests.web_fixtures import write_feed, write_site

pytestmark = pytest.mark.slow


@contextmanager
def logging_server(folder: Path):
    """http.server over `folder`; /drip sends a page one byte every 0.2 s for a minute, /hang
    accepts and never answers. Yields (base URL, the list of paths GET asked for)."""
    asked: list[str] = []
    stop = threading.Event()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(folder), **k)

        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            asked.append(self.path)
            if self.path.startswith("/drip"):
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                for _ in range(300):
                    if stop.is_set():
                        return
                    try:
                        self.wfile.write(b"<")
                        self.wfile.flush()
                    except OSError:  # the client gave up: what the test wants
                        return
                    time.sleep(0.2)
                return
            if self.path.startswith("/hang"):
                stop.wait(60)
                return
            super().do_GET()

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", asked
    finally:
        stop.set()
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def site(tmp_path):
    folder = tmp_path / "site"
    paths = write_site(folder)
    with logging_server(folder) as (base, asked):
        paths["feed"] = write_feed(folder, base)
        yield base, {k: base + v for k, v in paths.items()}, asked


def _add(home, *urls: str, extra=(), timeout: float = 120) -> tuple[dict, float]:
    t0 = time.monotonic()
    r = subprocess.run(
        [*perspect_cmd(), "news", "add", *urls, "--index", "tiny", "--home", str(home),
         "--json", *extra],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), time.monotonic() - t0


def test_urls_already_indexed_are_not_fetched_again(built, site):
    _, url, asked = site
    first, _ = _add(built, url["animals"])
    assert first["added"] == 1 and asked.count("/animals.html") == 1
    # the page again (another spelling of its URL), and a feed that links it beside two others
    again, _ = _add(built, url["animals"] + "#comments", url["feed"])
    assert asked.count("/animals.html") == 1  # neither the page nor the feed's link fetched
    by_input = {r["input"]: r for r in again["results"]}
    page = by_input[url["animals"] + "#comments"]
    assert page["status"] == "duplicate" and page["detail"] == "URL already indexed, not fetched"
    assert again["added"] == 2 and again["summary"]["dead"] == 1  # nuclear, uniforms; gone.html
    # a third time: every link of the feed is known or dead; only the feed and the dead link
    # are asked for
    before = list(asked)
    third, _ = _add(built, url["feed"])
    assert asked[len(before) :] == ["/feed.xml", "/gone.html"]
    assert third["summary"]["duplicate"] == 2 and third["added"] == 0
    skipped = [r for r in third["results"] if r["status"] == "duplicate"]
    assert all(r["detail"] == "URL already indexed, not fetched" for r in skipped)


def test_a_url_that_drips_or_hangs_is_cut_at_its_budget(built, site):
    base, url, _ = site
    got, took = _add(built, f"{base}/drip.html", f"{base}/hang.html", url["animals"],
                     extra=("--timeout", "1.5"), timeout=60)  # fmt: skip
    by_input = {r["input"]: r for r in got["results"]}
    for name in ("drip", "hang"):
        r = by_input[f"{base}/{name}.html"]
        assert r["status"] == "dead" and "1.5 s budget" in r["detail"], r
    assert got["added"] == 1
    assert took < 30, took  # two budgets of 1.5 s, the start of the CLI, one page and the write


def test_the_whole_add_has_a_budget_and_what_it_leaves_is_reported(built, site):
    base, url, _ = site
    hangs = [f"{base}/hang{i}.html" for i in range(4)]
    t0 = time.monotonic()
    from perspect import api

    rep = api.add_news("tiny", [*hangs, url["animals"]], home=built, timeout=1.0, budget=2.5)
    took = time.monotonic() - t0
    assert len(rep.outcomes) == 5  # one line per input, fetched or not
    skipped = [o for o in rep.outcomes if o.status == "skipped"]
    assert skipped and skipped[-1].input == url["animals"]
    assert all("2.5 s budget ran out" in o.detail for o in skipped)
    assert all(o.status == "dead" for o in rep.outcomes if o not in skipped)
    assert took < 2.5 + 1.5, took  # the budget, and a fetch given up within half a second
    assert f"not fetched {len(skipped)}" in rep.summary()


def test_the_news_pool_is_looked_up_by_index_not_scanned(built, site):
    _, url, _ = site
    _add(built, url["animals"])
    store = ItemStore(IndexDir(built, "tiny").current() / "news", readonly=True)
    try:
        for key in ("url", "content_hash"):
            meta = f"json_extract(metadata, '$.{key}')"  # the lookup of ItemStore.metadata_values
            q = f"EXPLAIN QUERY PLAN SELECT DISTINCT {meta} FROM items WHERE {meta} IN (?, ?)"
            plan = " ".join(str(r[-1]) for r in store._db.execute(q, ["a", "b"]))
            assert f"USING INDEX meta_{key}" in plan, plan
        assert store.metadata_values("url", [url["animals"], "http://x/"]) == {url["animals"]}
    finally:
        store.close()
