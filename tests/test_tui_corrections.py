"""The terminal UI's corrections (s / o / x, m then m, u), the Unclear column, related near
misses and the cited reason, driven by Pilot against the stand-in service."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

pytest.importorskip("textual")

from textual.widgets import Label, ListView, Static

from perspect.core.result import EvidenceItem, Member, PerspectiveCluster, SearchResult, Why
from perspect.tui.app import PerspectApp
from perspect.tui.widgets.cluster_item import ClusterItem
from perspect.tui.widgets.detail_screen import DetailScreen
from perspect.tui.widgets.related_item import RelatedItem
from tests.fake_service import FakeService, answer


def _status(app) -> str:
    return str(app.query_one("#status", Static).render())


async def _until(pilot, cond, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.02)


async def _search(pilot, app, service, claim="Animals should have rights") -> None:
    n = len(service.searches)
    box = app.query_one("#claim")
    box.focus()
    box.value = claim
    await pilot.press("enter")
    await _until(pilot, lambda: len(service.searches) > n and app.result is not None)
    await _until(pilot, lambda: "perspective" in _status(app) or "corrected" in _status(app))


def _items(app, column: str):
    return list(app.query_one(f"#{column}-list", ListView).query(ClusterItem))


async def test_a_side_correction_is_asked_confirmed_shown_and_undone():
    service = FakeService()
    app = PerspectApp(service)
    async with app.run_test(size=(140, 40)) as pilot:
        await _search(pilot, app, service)
        assert [i.cluster.representative.id for i in _items(app, "oppose")] == ["3", "4"]
        app.query_one("#oppose-list", ListView).focus()
        await pilot.press("s")  # "Rights come with duties." goes to Support
        await _until(pilot, lambda: "corrected" in _status(app) and len(service.searches) == 2)
        assert service.corrections[-1] == {
            "claim": "Animals should have rights",
            "perspective": "3",
            "side": "support",
            "same": None,
            "undo": False,
        }
        await _until(
            pilot, lambda: any(i.cluster.representative.id == "3" for i in _items(app, "support"))
        )
        moved = next(i for i in _items(app, "support") if i.cluster.representative.id == "3")
        assert "✎ corrected" in str(moved.query_one(Label).render())
        assert "u undoes" in _status(app)
        app.query_one("#support-list", ListView).focus()
        await pilot.press("u")
        await _until(pilot, lambda: service.corrections[-1]["undo"] is True)
        await _until(
            pilot,
            lambda: [i.cluster.representative.id for i in _items(app, "oppose")] == ["3", "4"],
        )
        assert "undone" in _status(app)


async def test_two_marks_say_two_perspectives_make_one_point():
    service = FakeService()
    app = PerspectApp(service)
    async with app.run_test(size=(140, 40)) as pilot:
        await _search(pilot, app, service)
        lv = app.query_one("#oppose-list", ListView)
        lv.focus()
        await pilot.press("m")
        assert "marked" in _status(app) and not service.corrections
        await pilot.press("down", "m")
        await _until(pilot, lambda: service.corrections)
        assert service.corrections[-1]["same"] == ("3", "4")


def _unclear_answer(claim: str) -> SearchResult:
    res = answer(claim)
    first = res.clusters[0]
    ev = first.evidence[0]
    why = Why(ev.id, "pain receptors", (12, 26))
    unsure = replace(res.clusters[2], stance="unclear", leans="oppose")
    cov = replace(res.coverage, oppose=1, unclear=1)
    return replace(res, clusters=(replace(first, why=why), res.clusters[1], unsure), coverage=cov)


class _UnclearService(FakeService):
    def search(self, claim, progress=None, cancel=None):
        super().search(claim, progress, cancel)
        return _unclear_answer(claim)


async def test_unclear_clusters_get_their_own_column_and_reasons_show():
    service = _UnclearService()
    app = PerspectApp(service)
    async with app.run_test(size=(160, 40)) as pilot:
        assert not app.query_one("#unclear").display  # no search yet: two columns
        await _search(pilot, app, service)
        assert app.query_one("#unclear").display
        assert [i.cluster.representative.id for i in _items(app, "unclear")] == ["4"]
        title = str(app.query_one("#unclear Label.side-title", Label).render())
        assert title == "Unclear (1)"
        sure = _items(app, "support")[0]
        assert "“pain receptors”" in str(sure.query_one(Label).render())
        app.query_one("#support-list", ListView).focus()
        await pilot.press("enter")
        await _until(pilot, lambda: isinstance(app.screen, DetailScreen))
        body = app.screen.query_one("#detail-body", Static).render()
        assert "Why" in str(body) and "pain receptors" in str(body)


class _NothingService(FakeService):
    def search(self, claim, progress=None, cancel=None):
        super().search(claim, progress, cancel)
        near = (Member("9", "Zoos keep animals captive.", 0.2, 0.5),)
        res = answer(claim)
        return replace(
            res, clusters=(), related=near, coverage=replace(res.coverage, support=0, oppose=0)
        )


async def test_nothing_relevant_shows_the_near_misses_marked_low_confidence():
    service = _NothingService()
    app = PerspectApp(service)
    async with app.run_test(size=(160, 40)) as pilot:
        await _search(pilot, app, service)
        await _until(pilot, lambda: app.query_one("#unclear").display)
        title = str(app.query_one("#unclear Label.side-title", Label).render())
        assert title == "Related, low confidence (1)"
        items = list(app.query_one("#unclear-list", ListView).query(RelatedItem))
        assert "low confidence" in str(items[0].query_one(Label).render())


def test_the_cluster_item_colours_an_unclear_side_yellow():
    m = Member("1", "x", 0.9, 0.5)
    c = PerspectiveCluster(
        m, (m,), "unclear", 0.55, 0.5, (EvidenceItem("e", "t", 0.1, "related"),), leans="support"
    )
    item = ClusterItem(c)
    text = item._text()
    assert "leans support 0.55" in text.plain and "unclear (" not in text.plain
    assert text.spans[0].style == "yellow"
