"""`perspect news add`: real pages and an RSS feed served by a local http.server (written here),
extracted with trafilatura and feedparser, de-duplicated and added to a tiny index's news pool."""

from __future__ import annotations

import json

import pytest

from perspect.core.index.store import ItemStore
from tests.conftest import run_cli
from tests.web_fixtures import free_port, static_server, write_feed, write_site

pytestmark = pytest.mark.slow


@pytest.fixture
def site(tmp_path):
    folder = tmp_path / "site"
    paths = write_site(folder)
    with static_server(folder) as base:
        paths["feed"] = write_feed(folder, base)
        yield base, {k: base + v for k, v in paths.items()}


def _news(home, name="tiny"):
    from perspect.core.index.layout import IndexDir

    store = ItemStore(IndexDir(home, name).current() / "news", readonly=True)
    try:
        return list(store)
    finally:
        store.close()


def test_pages_and_a_feed_go_in_and_every_failure_is_one_line(built, site):
    from perspect import api

    base, url = site
    dead = f"http://127.0.0.1:{free_port()}/nothing.html"
    before = {it.id for it in _news(built)}
    rep = api.add_news(
        "tiny",
        [url["animals"], url["feed"], url["short"], url["json"], url["missing"], dead],
        home=built,
        timeout=5,
    )
    by_input = {o.input: o for o in rep.outcomes}
    assert rep.count("added") == 3  # animals, and the feed's nuclear and uniforms pages
    assert by_input[url["short"]].status == "empty"
    assert (
        by_input[url["json"]].status == "not_html"
        and "application/json" in by_input[url["json"]].detail
    )
    assert by_input[url["missing"]].status == "dead" and "404" in by_input[url["missing"]].detail
    assert by_input[dead].status == "dead" and "connect" in by_input[dead].detail
    assert by_input[f"{base}/gone.html"].status == "dead"  # the feed's dead link
    news = [it for it in _news(built) if it.id not in before]
    articles = {it.metadata["article_id"]: it.metadata for it in news}
    assert len(articles) == 3
    meta = {m["url"]: m for m in articles.values()}
    animals = meta[url["animals"]]
    assert animals["title"] == "Council votes on animal welfare law"
    assert animals["outlet"] == "Daily Planet" and animals["date"] == "2026-03-01"
    assert meta[url["nuclear"]]["outlet"] == "Energy Post"
    texts = [it.text for it in news if it.metadata["url"] == url["animals"]]
    assert texts[0].startswith("The city council voted") and len(texts) >= 4  # split sentences
    assert rep.sentences == len(news) and rep.counts["news"] == len(_news(built))
    assert all("\n" not in o.line() for o in rep.outcomes)


def test_the_same_article_by_url_or_by_text_is_a_duplicate(built, site, tmp_path):
    from perspect import api

    base, url = site
    first = api.add_news("tiny", [url["animals"]], home=built)
    assert first.count("added") == 1
    # the same page again, with a fragment; and the same text under another URL
    (tmp_path / "site" / "copy.html").write_text((tmp_path / "site" / "animals.html").read_text())
    again = api.add_news("tiny", [url["animals"] + "#top", f"{base}/copy.html"], home=built)
    assert [o.status for o in again.outcomes] == ["duplicate", "duplicate"]
    assert again.outcomes[0].detail == "URL already indexed, not fetched"
    assert again.outcomes[1].detail == "same text already indexed"
    assert again.version == first.version  # nothing new: no write at all
    # within one batch too
    (tmp_path / "site" / "copy2.html").write_text((tmp_path / "site" / "nuclear.html").read_text())
    rep = api.add_news("tiny", [url["nuclear"], f"{base}/copy2.html"], home=built)
    assert [o.status for o in rep.outcomes] == ["added", "duplicate"]
    assert rep.outcomes[1].detail == "same text earlier in this batch"


def test_article_objects_and_bad_ones(built):
    from perspect import api

    text = "Reactors were approved today. " * 3
    rep = api.add_news(
        "tiny",
        [
            {"title": "T", "outlet": "O", "date": "2026-01-01", "text": text},
            {"title": "no text"},
            7,
        ],
        home=built,
    )
    assert [o.status for o in rep.outcomes] == ["added", "empty", "bad"]


def test_a_reader_rates_the_outlets_they_add(built, site):
    """`--leaning` rates what the add brings (an article's own `leaning` wins); without one a
    sentence is "unrated"; a leaning Perspect does not know is refused before any fetch."""
    from perspect import api
    from perspect.core.errors import PerspectError

    text = "Car-free centres cut asthma cases, the city's own survey found last year. " * 3
    api.add_news("tiny", [{"title": "Own", "text": text, "leaning": "right"},
                          {"title": "Other", "text": text.replace("asthma", "noise")}],
                 home=built, leaning="left")  # fmt: skip
    api.add_news("tiny", [site[1]["animals"]], home=built)
    by = {it.metadata.get("title"): it.metadata.get("leaning") for it in _news(built)}
    assert by["Own"] == "right" and by["Other"] == "left"
    assert by["Council votes on animal welfare law"] == "unrated"
    with pytest.raises(PerspectError, match="unknown leaning"):
        api.add_news("tiny", [site[1]["nuclear"]], home=built, leaning="far-out")
    run_cli("news", "add", site[1]["nuclear"], "--index", "tiny", "--home", str(built),
            "--leaning", "centre")  # fmt: skip
    assert "centre" in {it.metadata.get("leaning") for it in _news(built)}


def test_an_unknown_index_is_refused_before_any_fetch(home, site):
    from perspect import api
    from perspect.core.errors import IndexNotFound

    with pytest.raises(IndexNotFound):
        api.add_news("nope", [site[1]["animals"]], home=home)


def test_cli_reports_each_input_and_adds_the_rest(built, site):
    _, url = site
    r = run_cli(
        "news",
        "add",
        url["feed"],
        url["short"],
        url["missing"],
        "--index",
        "tiny",
        "--home",
        str(built),
    )
    out = r.stdout
    assert "added: " + url["nuclear"] in out and "added: " + url["uniforms"] in out
    assert f"empty article: {url['short']}" in out and f"dead URL: {url['missing']}" in out
    assert "added 2" in out and "news sentences indexed" in out
    r = run_cli("news", "add", url["nuclear"], "--index", "tiny", "--home", str(built), "--json")
    got = json.loads(r.stdout)
    assert got["summary"]["duplicate"] == 1 and got["added"] == 0
    bad = run_cli("news", "add", url["nuclear"], "--index", "nope", "--home", str(built), ok=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "nope" in bad.stderr
