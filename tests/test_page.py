"""The page `perspect serve` answers at /, driven in a real browser (Debian's chromium, headless,
through Playwright) against a real index and the shipped models, as a reader uses it: both
columns, a cluster's reason inside its evidence, a correction that survives a reload and its
undo, two articles compared, the error line for an empty claim, every control reached by Tab.
Each test saves a screenshot at desktop and phone width into `.screenshots/page/` (README)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perspect.core.index.config import IndexConfig
from perspect.serve.config import ServeConfig
from tests.conftest import write_json
from tests.test_shipped_bundle import CLAIM, EVIDENCE, POOL
from tests.web_fixtures import free_port, perspect_server, wait_ready

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parent.parent / ".screenshots" / "page"
MODELS = Path(__file__).resolve().parent.parent / "models"
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path(CHROMIUM).is_file(), reason="no chromium (make test installs it)"),
    pytest.mark.skipif(not (MODELS / "pair").is_dir(), reason="no model bundle in this checkout"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")


# A paragraph whose sentence closest to the farming perspectives argues for them, so that the
# page has a reason to mark (the shipped model reads it at P(for) .93; the pool's own wording,
# "Legal protections would force the industry to end these cruel practices.", at .74-.76, and the
# sentence the index stores for it is the paragraph's first, which it reads under the cut).
FARMS = (
    "With legal rights, animals could no longer be confined in cages too small to turn around "
    "in, so the cruelty of factory farming would have to end. Farms would have to change."
)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """`perspect serve` over a small real pool (bm25 + dense, with evidence), shipped models."""
    from perspect import api
    from perspect.api import Source

    d = tmp_path_factory.mktemp("page")
    pf = write_json(d / "p.json", [{"id": i, "text": t} for i, t, _ in POOL])
    ef = write_json(d / "e.json", [{"id": i, "text": FARMS if i == "101" else t}
                                   for i, t in EVIDENCE])  # fmt: skip
    home = d / "home"
    api.build_index("page", [Source("perspectives", pf), Source("evidence", ef)], home=home,
                    config=IndexConfig(("bm25", "dense")))  # fmt: skip
    cfg = ServeConfig(index="page", home=str(home), port=free_port(), warm_fast=False)
    with perspect_server(cfg) as url:
        wait_ready(url, timeout=300)
        yield url


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


@pytest.fixture
def page(browser, request):
    w, h = WIDTHS["desktop"]
    ctx = browser.new_context(viewport={"width": w, "height": h})
    p = ctx.new_page()
    p.set_default_timeout(120_000)
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    yield p
    SHOTS.mkdir(parents=True, exist_ok=True)
    for name, (w, h) in WIDTHS.items():
        p.set_viewport_size({"width": w, "height": h})
        p.screenshot(path=str(SHOTS / f"{request.node.name}-{name}.png"), full_page=True)
    ctx.close()
    assert not errors, errors  # no script error on the page, whatever the test did


def ask(page, site: str, claim: str) -> None:
    page.goto(site + "/")
    page.fill("#claim", claim)
    page.press("#claim", "Enter")
    page.wait_for_selector("#answer:not([hidden]) .cluster")


def test_a_claim_is_answered_in_two_columns(page, site):
    ask(page, site, CLAIM)
    support = page.locator("#support .cluster")
    oppose = page.locator("#oppose .cluster")
    assert support.count() >= 1 and oppose.count() >= 1
    assert "support" in page.locator("#coverage").inner_text()
    # the link reproduces the answer
    link = page.get_attribute("#link", "href")
    assert "claim=" in link and "index=page" in link
    page.goto(site + link)
    page.wait_for_selector("#answer:not([hidden]) .cluster")
    assert page.locator("#support .cluster").count() == support.count()
    timing = page.evaluate("window.perspectTiming")
    assert timing["drawMs"] < 100, timing  # drawn within 100 ms of the reply
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: one column, nothing wider
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    boxes = [page.locator(s).bounding_box() for s in ("#h-support", "#h-oppose")]
    assert boxes[1]["y"] > boxes[0]["y"]  # Oppose below Support, not beside it


def test_a_clusters_reason_is_marked_inside_its_evidence(page, site):
    ask(page, site, CLAIM)
    cards = page.locator(".cluster:has(mark.reason)")
    assert cards.count() >= 1
    card = cards.first
    para = card.locator(".paragraph").inner_text()
    reason = card.locator("mark.reason").inner_text()
    assert reason and reason in para and len(para) > len(reason)
    assert card.locator(".verdict").inner_text() in ("supports", "related", "argues against")


def test_a_corrected_side_stays_after_a_reload_and_undo_takes_it_back(page, site):
    ask(page, site, CLAIM)
    card = page.locator("#support .cluster").first
    pid = card.get_attribute("data-id")
    card.locator("button", has_text="Move to oppose").click()
    page.wait_for_selector(f'#oppose .cluster[data-id="{pid}"] .tag')
    page.reload()  # the link of the answer: the server kept the correction
    page.wait_for_selector(f'#oppose .cluster[data-id="{pid}"] .tag')
    assert page.locator(f'#support .cluster[data-id="{pid}"]').count() == 0
    page.click("#undo")  # the tab still knows what it corrected
    page.wait_for_selector(f'#support .cluster[data-id="{pid}"]')
    assert page.locator(f'.cluster[data-id="{pid}"] .tag').count() == 0
    assert page.is_disabled("#undo")


def test_two_articles_are_compared_point_by_point(page, site):
    page.goto(site + "/")
    page.click("#compare-box summary")
    page.fill("#a-title", "Council backs shelters")
    page.fill("#a-text", "The council approved new funding for animal shelters on Monday. "
              "The shelters will hire twelve new staff.")  # fmt: skip
    page.fill("#b-title", "Shelters struggle")
    page.fill("#b-text", "The council rejected new funding for animal shelters on Monday. "
              "Shelters will cut staff.")  # fmt: skip
    page.click("#compare button[type=submit]")
    page.wait_for_selector("#comparison h3")
    text = page.locator("#comparison").inner_text()
    assert "Agreement" in text and "Dispute" in text


def test_an_empty_or_oversized_claim_or_unknown_index_gets_one_error_line(page, site):
    page.goto(site + "/")
    page.wait_for_selector("#examples option", state="attached")
    page.fill("#claim", "   ")
    page.press("#claim", "Enter")
    err = page.locator("#error")
    err.wait_for(state="visible")
    assert "empty" in err.inner_text() and "\n" not in err.inner_text().strip()
    page.fill("#claim", "animals " * 200)  # past the server's 1,000 characters: its one line
    page.press("#claim", "Enter")
    page.wait_for_function("document.getElementById('error').textContent.includes('longer')")
    assert "1000 characters" in err.inner_text()
    page.goto(site + "/?index=nope&claim=x")
    err.wait_for(state="visible")
    assert "Unknown index" in err.inner_text()


def test_every_control_is_reached_with_tab_and_shows_its_focus(page, site):
    ask(page, site, CLAIM)
    page.click("#compare-box summary")
    controls = page.evaluate(
        """() => { const all = [...document.querySelectorAll(
            'a[href], button:not([disabled]), input, select, textarea, summary')]
          .filter(e => e.offsetParent !== null && !e.hidden);
          all.forEach((e, i) => { e.dataset.t = String(i); });
          return all.length; }"""
    )
    page.focus("header a")
    seen, outlines = set(), []
    for _ in range(controls + 5):
        page.keyboard.press("Tab")
        got = page.evaluate(
            """() => { const e = document.activeElement;
            return [e.dataset.t || e.tagName, getComputedStyle(e).outlineStyle]; }"""
        )
        if got[0] in seen:
            break  # round again
        seen.add(got[0])
        if got[0].isdigit():  # a control (not the page itself, past the last one)
            outlines.append(got[1])
    reached = {x for x in seen if x.isdigit()}
    assert len(reached) == controls, (sorted(reached, key=int), controls)  # each one, by Tab
    assert all(o != "none" for o in outlines if o), outlines  # and its focus shows


def test_each_perspective_shows_its_news_with_the_outlets_leaning(
    page, tiny_pair_model, tiny_base, tmp_path, monkeypatch
):
    """An index with news (a comparator that lets every pair through, so what is drawn does not
    hang on a model): the press line under the balance, each sided card's news with a leaning
    tag, the rest apart as news on the claim."""
    from perspect.indexer.indexer import Indexer, Source
    from tests.conftest import PERSPECTIVES, write_jsonl
    from tests.test_news_search import ARTICLES, _comparator

    home = tmp_path / "home"
    Indexer("withnews", home=home, config=IndexConfig(("bm25",))).build(
        [
            Source("perspectives", write_json(tmp_path / "p.json", PERSPECTIVES)),
            Source("news", write_jsonl(tmp_path / "news.jsonl", ARTICLES)),
        ]
    )
    monkeypatch.setenv("PERSPECT_COMPARATOR", str(_comparator(tiny_base, tmp_path / "c", "all")))
    cfg = ServeConfig(index="withnews", home=str(home), port=free_port(), warm_fast=False,
                      model=str(tiny_pair_model))  # fmt: skip
    with perspect_server(cfg) as url:
        wait_ready(url, timeout=300)
        ask(page, url, "Animals feel pain and need legal protection")
        assert page.locator("#spread").inner_text().startswith("News: carried by left")
        tags = page.locator(".cluster .cluster-news .leaning")
        assert tags.count() >= 1
        assert {tags.nth(i).inner_text() for i in range(tags.count())} <= {"left", "right"}
