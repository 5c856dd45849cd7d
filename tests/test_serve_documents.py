"""`perspect serve` with the reader's documents: POST /indexes/{name}/documents adds article
objects (as `perspect index add --documents`), GET /indexes/{name}/context opens a sentence in
its article, an unknown one is a one-line 404. A real uvicorn over the tiny index of
tests/test_serve.py."""

from __future__ import annotations

import httpx
import pytest

from tests.test_serve import index_home, server  # noqa: F401 (fixtures)
from tests.web_fixtures import wait_ready

pytestmark = pytest.mark.slow

ARTICLE = {
    "title": "Zoos are prisons",
    "outlet": "The Ledger",
    "date": "2025-03-04",
    "url": "https://ledger.example/zoos",
    "text": "The city zoo opened in 1912. Zoos confine wild animals to small spaces for life, "
    "which is cruel. Keeping elephants captive shortens their lives by decades.",
}


def test_documents_are_added_and_a_sentence_opens_in_its_article(server):  # noqa: F811
    url, _ = server
    wait_ready(url)
    with httpx.Client(base_url=url, timeout=120) as c:
        r = c.post("/indexes/tiny/documents", json={"articles": [ARTICLE]})
        assert r.status_code == 200, r.text
        rep = r.json()
        assert rep["added"] == 1 and rep["sentences"] == 3 and rep["counts"]["documents"] == 3
        article_id = rep["results"][0]["article_id"]
        again = c.post("/indexes/tiny/documents", json={"articles": [ARTICLE]}).json()
        assert again["added"] == 0 and again["results"][0]["status"] == "duplicate"
        pools = c.get("/indexes").json()["indexes"][0]["pools"]
        assert pools["documents"] == 3

        got = c.get("/indexes/tiny/context", params={"id": f"{article_id}#1"})
        assert got.status_code == 200, got.text
        ctx = got.json()
        assert ctx["schema"] == "perspect.context/1" and ctx["focus"] == 1
        assert ctx["sentences"][1].startswith("Zoos confine wild animals")
        assert ctx["source"]["outlet"] == "The Ledger" and ctx["source"]["position"] == 1
        missing = c.get("/indexes/tiny/context", params={"id": "nope#3"})
        assert missing.status_code == 404 and set(missing.json()) == {"error"}
        assert "no documents sentence 'nope#3'" in missing.json()["error"]
        assert c.get("/indexes/tiny/context").status_code == 422  # no id
        r = c.post("/search", json={"claim": "zoos confine animals", "pool": "documents"})
        assert r.status_code == 200 and r.json()["hits"][0]["pool"] == "documents"
