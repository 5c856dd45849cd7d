"""The terminal UI driven with Textual's Pilot: type a claim, wait for the worker, read the screen."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import ListView, Static

from perspect.tui.app import PerspectApp
from perspect.tui.widgets.cluster_item import ClusterItem
from perspect.tui.widgets.detail_screen import DetailScreen
from perspect.tui.widgets.help_screen import HelpScreen

CLAIM = "Animals feel pain and need legal protection"


def _app(tiny_index, tiny_pair_model, tmp_path, **kw) -> PerspectApp:
    """The app on the real engine (perspect.api.PerspectService), as `perspect tui` runs it."""
    from perspect.api import PerspectService

    return PerspectApp(
        PerspectService("tiny", home=tiny_index, model=tiny_pair_model, **kw),
        export_dir=tmp_path / "exports",
        show_timings=False,
    )


async def _search(pilot, app, claim: str = CLAIM) -> None:
    """Type the claim and wait for the result. Focus is set explicitly and the result polled:
    on a loaded CI box a click can land before the input is ready and keys go elsewhere."""
    await pilot.pause()
    box = app.query_one("#claim")
    box.cursor_blink = False  # a blinking cursor makes snapshots depend on timing
    box.focus()
    await pilot.pause()
    await pilot.press(*claim, "enter")
    for _ in range(300):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.result is not None and app.result.claim == claim:
            break
        await pilot.pause(0.05)
    assert app.result is not None, "the search never finished"


async def test_search_fills_both_columns_and_coverage(tiny_index, tiny_pair_model, tmp_path):
    app = _app(tiny_index, tiny_pair_model, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _search(pilot, app)
        res = app.result
        assert res is not None and res.claim == CLAIM
        shown = {
            s: [
                i.cluster
                for i in app.query_one(f"#{s}-list", ListView).children
                if isinstance(i, ClusterItem)
            ]
            for s in ("support", "oppose")
        }
        assert tuple(shown["support"]) == res.side("support")
        assert tuple(shown["oppose"]) == res.side("oppose")
        status = str(app.query_one("#status", Static).render())
        assert f"{len(res.clusters)} perspective" in status and "Tab to a column" in status
        coverage = str(app.query_one("#coverage", Static).render())
        assert f"Support {res.coverage.support}" in coverage


async def test_open_detail_export_help_history(tiny_index, tiny_pair_model, tmp_path):
    app = _app(tiny_index, tiny_pair_model, tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _search(pilot, app)
        side = "support" if app.result.side("support") else "oppose"
        app.query_one(f"#{side}-list", ListView).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        body = str(app.screen.query_one("#detail-body", Static).render())
        assert app.result.side(side)[0].representative.text in body and "Evidence" in body
        await pilot.press("escape")
        await pilot.press("ctrl+s")
        await pilot.pause()
        exported = sorted(p.suffix for p in (tmp_path / "exports").iterdir())
        assert exported == [".json", ".md"]
        md = next((tmp_path / "exports").glob("*.md")).read_text()
        assert md.startswith(f"# Perspectives on: {CLAIM}")
        await pilot.press("question_mark")  # from the column
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        app.query_one("#claim").focus()
        await pilot.press("f1")  # inside the claim box, where "?" is just a character
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        app.query_one("#claim").value = ""
        await pilot.press("up")
        assert app.query_one("#claim").value == CLAIM


async def test_missing_index_says_how_to_fix(tmp_path, tiny_pair_model):
    from perspect.api import PerspectService

    app = PerspectApp(PerspectService("nope", home=tmp_path, model=tiny_pair_model))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        status = str(app.query_one("#status", Static).render())
        assert "no index named 'nope'" in status and "perspect index build" in status


async def test_empty_claim_is_refused_without_a_search(tiny_index, tiny_pair_model, tmp_path):
    app = _app(tiny_index, tiny_pair_model, tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.click("#claim")
        await pilot.press("space", "enter")
        await pilot.pause()
        assert app.result is None and not app.workers


def test_snapshot_after_search(snap_compare, tiny_index, tiny_pair_model, tmp_path):
    app = _app(tiny_index, tiny_pair_model, tmp_path)

    async def run_before(pilot) -> None:
        await _search(pilot, app)

    assert snap_compare(app, run_before=run_before, terminal_size=(120, 36))


def test_snapshot_help(snap_compare, tiny_index, tiny_pair_model, tmp_path):
    app = _app(tiny_index, tiny_pair_model, tmp_path)
    assert snap_compare(app, press=["f1"], terminal_size=(100, 30))


async def test_without_models_the_retrieved_hits_are_listed(tiny_index, tmp_path):
    from perspect.tui.widgets.hit_item import HitItem

    app = _app(tiny_index, tmp_path / "no-models", tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _search(pilot, app)
        assert not app.result.clusters and app.result.hits
        items = [i for i in app.query_one("#support-list", ListView).children]
        assert items and all(isinstance(i, HitItem) for i in items)
        assert [i.hit.id for i in items] == [h.id for h in app.result.hits]
        status = str(app.query_one("#status", Static).render())
        assert "retrieval only" in status


async def test_escape_while_the_models_load_cancels_at_once(tiny_index, tiny_pair_model, tmp_path):
    import threading

    app = _app(tiny_index, tiny_pair_model, tmp_path)
    loading = threading.Event()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        perspect = app.service._open()
        real = perspect.engine

        def slow_engine():  # the first search loads the models: seconds on a real bundle
            loading.set()
            threading.Event().wait(1.5)
            return real()

        perspect.engine = slow_engine
        box = app.query_one("#claim")
        box.focus()
        await pilot.press(*CLAIM, "enter")
        for _ in range(100):
            if loading.is_set():
                break
            await pilot.pause(0.02)
        await pilot.press("escape")
        await pilot.pause()
        assert str(app.query_one("#status", Static).render()) == "search cancelled"
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        assert app.result is None  # nothing of the cancelled search reached the screen
        assert str(app.query_one("#status", Static).render()) == "search cancelled"
