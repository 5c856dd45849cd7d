"""The terminal UI with a perspective mined from the reader's documents (tests/fake_service.py's
"mined" answer): its source on the column and the coverage line, its detail listing the source,
and Enter opening the sentence in its article. The real lookup of a sentence's article is tested
in tests/test_documents.py, the mining itself in tests/test_mining.py."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import ListView, Static

from perspect.tui.app import PerspectApp
from perspect.tui.widgets.cluster_item import ClusterItem
from perspect.tui.widgets.context_screen import ContextScreen
from perspect.tui.widgets.coverage_bar import CoverageBar
from perspect.tui.widgets.detail_screen import DetailScreen
from perspect.tui.widgets.help_screen import HelpScreen
from tests.fake_service import ARTICLE_TEXT, FakeService
from tests.test_tui_service import _type, _until


async def test_a_mined_perspective_shows_its_source_and_opens_in_its_article():
    app = PerspectApp(FakeService("mined"), show_timings=False)
    async with app.run_test(size=(130, 40)) as pilot:
        await _type(pilot, app, "Zoos should be closed")
        await _until(pilot, lambda: app.result is not None)
        await pilot.pause()
        items = [i for i in app.query_one("#oppose-list", ListView).children
                 if isinstance(i, ClusterItem)]  # fmt: skip
        first = str(items[0].query_one("Label").render())
        assert "↳ The Ledger · 2025-03-04 · Zoos are prisons" in first and "1 source" in first
        cov = str(app.query_one(CoverageBar).render())
        assert "only from mined sentences" in cov
        assert "also read as “Zoos are good”, the other way round" in cov

        lv = app.query_one("#oppose-list", ListView)
        lv.focus()
        lv.index = 0
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, DetailScreen))
        await pilot.pause()
        assert "Mined from 1 source" in str(app.screen.query_one(".sources-title").render())
        await pilot.press("enter")  # on the mined phrasing: its article
        await _until(pilot, lambda: isinstance(app.screen, ContextScreen))
        await pilot.pause()
        shown = [str(s.render()) for s in app.screen.query(".context-sentence")]
        assert shown == list(ARTICLE_TEXT)
        focus = app.screen.query_one("#context-focus", Static)
        assert str(focus.render()) == ARTICLE_TEXT[1]
        head = str(app.screen.query_one("#context-head", Static).render())
        assert "The Ledger · 2025-03-04" in head and "https://ledger.example/zoos" in head
        assert "sentence 2 of 3" in head
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen) and app.screen.topic == "context"
        await pilot.press("escape")
        await pilot.press("escape")
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, (DetailScreen, ContextScreen))


async def test_a_curated_perspective_still_closes_on_enter():
    app = PerspectApp(FakeService("mined"), show_timings=False)
    async with app.run_test(size=(130, 40)) as pilot:
        await _type(pilot, app, "Zoos should be closed")
        await _until(pilot, lambda: app.result is not None)
        lv = app.query_one("#support-list", ListView)
        lv.focus()
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, DetailScreen))
        assert not app.screen.query("#sources")
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, DetailScreen)
