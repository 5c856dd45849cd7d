"""News in the search, article comparison, and the TUI's news panel, with tiny models the tests
make. The tiny comparator's decisions are set by hand (what passes the gate is what matters here,
not model quality): "all" lets every pair through as strengthen, "none" lets nothing through."""

from __future__ import annotations

import json

import pytest

from perspect.reranker.comparator import Comparator
from tests.conftest import PERSPECTIVES, run_cli, write_json, write_jsonl

ARTICLES = [
    {
        "id": "a1",
        "title": "Shelters report record adoptions",
        "outlet": "Daily Planet",
        "leaning": "left",
        "date": "2024-05-01",
        "text": "Animal shelters report record adoptions this spring. Animals feel pain and fear "
        "when abandoned, vets say.\n\nThe city council will vote on a new law in June.",
    },
    {
        "id": "a2",
        "title": "Stadium opens",
        "outlet": "Sports Weekly",
        "leaning": "lean right",
        "date": "2024-05-02",
        "text": "The new stadium opened with a concert. Tickets sold out in an hour.",
    },
]


def _comparator(tiny_base, folder, gate: str):
    model = Comparator.from_base(tiny_base, rank=2)
    cut = (
        {"strengthen": 0.0, "weaken": 1.1} if gate == "all" else {"strengthen": 1.1, "weaken": 1.1}
    )
    model.manifest["thresholds"] = {"pairs": dict(cut), "doc": dict(cut)}
    model.save(folder)
    return folder


@pytest.fixture(scope="module")
def news_index(tmp_path_factory):
    from perspect.core.index.config import IndexConfig
    from perspect.indexer.indexer import Indexer, Source

    d = tmp_path_factory.mktemp("news-index")
    Indexer("withnews", home=d / "home", config=IndexConfig(("bm25",))).build(
        [
            Source("perspectives", write_json(d / "p.json", PERSPECTIVES)),
            Source("news", write_jsonl(d / "news.jsonl", ARTICLES)),
        ]
    )
    return d / "home"


def test_search_ties_news_to_the_claim_and_a_cluster(
    news_index, tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    from perspect.api import Perspect

    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    with Perspect.open("withnews", home=news_index, model=tiny_pair_model) as p:
        res = p.search("Animals feel pain and need legal protection")
    assert res.news, "every retrieved sentence passes this gate"
    n = res.news[0]
    assert n.relation == "strengthens" and 0 <= n.probability <= 1
    assert n.metadata["outlet"] in {"Daily Planet", "Sports Weekly"} and n.metadata["date"]
    assert n.metadata["title"] and n.metadata["article_id"] in {"a1", "a2"}
    reps = {c.representative.id for c in res.clusters}
    assert n.cluster in reps and n.cluster_relation == "strengthens"
    assert res.news_for(next(c for c in res.clusters if c.representative.id == n.cluster))
    j = res.to_json()["news"][0]
    assert set(j) >= {"id", "text", "relation", "probability", "rationale", "cluster", "outlet"}
    for r in j["rationale"]:
        assert j["text"][r["start"] : r["end"]] == r["text"]


def test_each_cluster_shows_its_news_and_the_press_line(
    news_index, tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    """A sided cluster's own news (retrieved by its words) sits under it with its outlet's
    leaning; the answer counts the clusters each leaning carries, in every front door."""
    from perspect.api import Perspect
    from perspect.core.presentation.render import to_markdown

    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    with Perspect.open("withnews", home=news_index, model=tiny_pair_model) as p:
        res = p.search("Animals feel pain and need legal protection")
    sided = [c for c in res.clusters if c.stance in ("support", "oppose")]
    assert sided and any(res.news_for(c) for c in sided)
    assert {n.leaning for n in res.news} <= {"left", "right"}
    assert res.spread.line and res.spread.line.startswith("carried by left ")
    j = res.to_json()
    assert j["spread"]["line"] == res.spread.line and j["news"][0]["leaning"] in {"left", "right"}
    assert "news: carried by" in to_markdown(res) and "Daily Planet (left)" in to_markdown(res)
    r = run_cli(
        "search", "Animals feel pain and need legal protection", "--index", "withnews",
        "--home", str(news_index), "--model", str(tiny_pair_model),
    )  # fmt: skip
    assert "news: carried by" in r.stdout


def test_one_sentence_in_several_articles_is_shown_once(
    tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    from perspect.api import Perspect
    from perspect.core.index.config import IndexConfig
    from perspect.core.presentation.render import news_line
    from perspect.indexer.indexer import Indexer, Source

    copies = [  # one wire sentence in two more outlets, spacing and case aside
        {**ARTICLES[0], "id": f"w{i}", "outlet": f"Wire {i}", "text": text}
        for i, text in enumerate(
            [
                "Animals feel pain and fear when abandoned, vets say.",
                "animals feel  pain and fear when abandoned, Vets say. Shelters are full.",
            ]
        )
    ]
    Indexer("copies", home=tmp_path / "home", config=IndexConfig(("bm25",))).build(
        [
            Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES)),
            Source("news", write_jsonl(tmp_path / "news.jsonl", ARTICLES + copies)),
        ]
    )
    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    with Perspect.open("copies", home=tmp_path / "home", model=tiny_pair_model) as p:
        res = p.search("Animals feel pain and fear when abandoned")
    words = [" ".join(n.text.split()).casefold() for n in res.news]
    assert len(words) == len(set(words)), words
    pain = [n for n in res.news if "feel pain" in n.text]
    assert len(pain) == 1 and len(pain[0].also) == 2, pain
    ids = {pain[0].id, *pain[0].also}
    assert {i.split("#")[0] for i in ids} == {"a1", "w0", "w1"}
    assert "also in 2 other articles" in news_line(pain[0])
    assert res.to_json()["news"][res.news.index(pain[0])]["also"] == list(pain[0].also)


def test_news_that_bears_on_nothing_is_not_shown(
    news_index, tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    from perspect.api import Perspect

    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "none")))
    with Perspect.open("withnews", home=news_index, model=tiny_pair_model) as p:
        res = p.search("Animals feel pain and need legal protection")
    assert res.clusters and res.news == ()


def test_an_index_without_news_does_not_load_the_comparator(
    tiny_index, tiny_pair_model, tmp_path, monkeypatch
):
    from perspect.api import Perspect

    monkeypatch.setenv("PERSPECT_COMPARATOR", str(tmp_path / "not-there"))
    with Perspect.open("tiny", home=tiny_index, model=tiny_pair_model) as p:
        res = p.search("Animals feel pain and need legal protection")
        assert p.engine().comparator is None
    assert res.news == ()


A_TEXT = """# Council backs shelter funding
The council approved new funding for animal shelters. Adoptions rose sharply this year.
Volunteers say conditions improved. The mayor praised the staff."""
B_TEXT = """# Shelters struggle
Animal shelters are overcrowded and underfunded. Adoptions fell in several districts.
Staff warn of burnout."""


def test_compare_two_articles_end_to_end(tiny_base, tmp_path, monkeypatch):
    cmp_dir = _comparator(tiny_base, tmp_path / "c", "all")
    (tmp_path / "a.md").write_text(A_TEXT)
    (tmp_path / "b.md").write_text(B_TEXT)
    r = run_cli(
        "compare", str(tmp_path / "a.md"), str(tmp_path / "b.md"), "--model", str(cmp_dir), "--json"
    )
    got = json.loads(r.stdout)
    assert got["a"]["title"] == "Council backs shelter funding" and got["a"]["sentences"] == 4
    assert got["b"]["sentences"] == 3
    assert got["agreement"] and not got["dispute"]  # the gate lets all through as strengthen
    assert {x["a"] for x in got["agreement"]} <= set(range(4))
    assert 0 < got["share"]["strengthens"] <= 1 and got["candidates"] >= len(got["agreement"])
    text = run_cli(
        "compare", str(tmp_path / "a.md"), str(tmp_path / "b.md"), "--model", str(cmp_dir)
    )
    assert "Points of agreement" in text.stdout


def test_compare_refuses_bad_input_in_one_line(tmp_path):
    (tmp_path / "empty.md").write_text("   \n")
    (tmp_path / "b.md").write_text(B_TEXT)
    r = run_cli("compare", str(tmp_path / "empty.md"), str(tmp_path / "b.md"), ok=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = run_cli("compare", str(tmp_path / "missing.md"), str(tmp_path / "b.md"), ok=False)
    assert r.returncode == 2 and "no such file" in r.stderr


async def test_tui_news_panel_and_cluster_detail(
    news_index, tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    from textual.widgets import Label, ListView, Static

    from perspect.tui.app import PerspectApp
    from perspect.tui.widgets.cluster_item import ClusterItem
    from perspect.tui.widgets.detail_screen import DetailScreen
    from perspect.tui.widgets.news_panel import NewsPanel
    from tests.test_tui import _search

    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    from perspect.api import PerspectService

    service = PerspectService("withnews", home=news_index, model=tiny_pair_model)
    app = PerspectApp(service, show_timings=False)
    async with app.run_test(size=(120, 48)) as pilot:
        await pilot.pause()
        assert not app.query_one(NewsPanel).display  # nothing searched: no empty panel
        await _search(pilot, app)
        panel = app.query_one(NewsPanel)
        assert panel.display
        body = str(app.query_one("#news-body", Static).render())
        assert app.result.news[0].text[:30] in body.replace("\n", " ").replace("  ", " ") or (
            "strengthens" in body
        )
        # each sentence under its article: outlet (leaning) · date · title
        first = app.result.news[0]
        meta = first.metadata
        assert f"{meta['outlet']} ({first.leaning}) · {meta['date']} · {meta['title']}" in body
        # the press line in the coverage bar, each sided card with its news and their leanings
        bar = str(app.query_one("#coverage", Static).render())
        assert "news: carried by left" in bar
        cards = [
            str(item.query_one(Label).render())
            for side in ("support", "oppose")
            for item in app.query_one(f"#{side}-list", ListView).children
            if isinstance(item, ClusterItem) and item.news
        ]
        assert cards and any("(left)" in c or "(right)" in c for c in cards)
        target = app.result.news[0].cluster
        for side in ("support", "oppose"):
            lv = app.query_one(f"#{side}-list", ListView)
            for i, item in enumerate(lv.children):
                if isinstance(item, ClusterItem) and item.cluster.representative.id == target:
                    lv.focus()
                    lv.index = i
                    await pilot.press("enter")
                    await pilot.pause()
                    break
        screen = app.screen
        assert isinstance(screen, DetailScreen) and screen.news
        detail = str(screen.query_one("#detail-body", Static).render())
        assert "News on this perspective" in detail


async def test_tui_compare_screen_links_both_articles(tiny_index, tiny_base, tmp_path, monkeypatch):
    from textual.widgets import Static

    from perspect.tui.app import PerspectApp
    from perspect.tui.widgets.compare_screen import CompareScreen

    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    (tmp_path / "a.md").write_text(A_TEXT)
    (tmp_path / "b.md").write_text(B_TEXT)
    from perspect.api import PerspectService

    service = PerspectService("tiny", home=tiny_index)
    app = PerspectApp(service, compare=(tmp_path / "a.md", tmp_path / "b.md"))
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(300):
            await pilot.pause(0.05)
            if isinstance(app.screen, CompareScreen):
                break
        await pilot.pause()  # let the pushed screen compose
        screen = app.screen
        assert isinstance(screen, CompareScreen), "the comparison never opened"
        a_body = str(screen.query_one("#compare-a-body", Static).render())
        b_body = str(screen.query_one("#compare-b-body", Static).render())
        assert "[1]" in a_body and "[1]" in b_body  # link 1 is marked on both sides
        assert "Council" not in a_body  # the heading is the title, not a sentence
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, CompareScreen)
