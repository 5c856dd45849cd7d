"""The terminal UI against a stand-in search service (tests/fake_service.py): cancelling, the next
search after a cancel, quitting during a search that never ends, each screen's own help, and the
→ key on an empty claim box."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import Label, ListView, Static

from perspect.core.service import SearchService
from perspect.tui.app import PerspectApp
from perspect.tui.widgets.claim_input import EXAMPLES
from perspect.tui.widgets.detail_screen import DetailScreen
from perspect.tui.widgets.help_screen import HelpScreen
from tests.fake_service import FakeService

ROOT = Path(__file__).resolve().parent.parent


def _status(app) -> str:
    return str(app.query_one("#status", Static).render())


def _titles(app) -> list[str]:
    return [
        str(app.query_one(f"#{s} Label.side-title", Label).render()) for s in ("support", "oppose")
    ]


async def _type(pilot, app, claim: str) -> None:
    box = app.query_one("#claim")
    box.focus()
    box.value = ""
    await pilot.pause()
    await pilot.press(*claim, "enter")


async def _until(pilot, cond, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await pilot.pause(0.02)


def test_the_fake_and_the_real_service_satisfy_the_protocol():
    from perspect.api import PerspectService

    assert isinstance(FakeService(), SearchService)
    assert isinstance(PerspectService("x"), SearchService)


async def test_escape_cancels_keeps_the_titles_and_the_next_search_answers():
    service = FakeService("cooperative")
    app = PerspectApp(service, show_timings=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert "index fake" in _status(app)
        await _type(pilot, app, "Zoos should be closed")
        await _until(pilot, service.started.is_set)
        await pilot.press("escape")
        await pilot.pause()
        assert _status(app) == "search cancelled"
        await _until(pilot, lambda: not app.busy)  # the worker saw the cancel and left
        assert _titles(app) == ["Support", "Oppose"]
        await _type(pilot, app, "Zoos should be closed")
        await _until(pilot, lambda: app.result is not None)
        assert service.searches == ["Zoos should be closed"] * 2
        assert _titles(app) == ["Support (1)", "Oppose (2)"]
        assert "3 perspectives" in _status(app)


async def test_each_screen_has_its_own_help():
    app = PerspectApp(FakeService(), show_timings=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _type(pilot, app, "Zoos should be closed")
        await _until(pilot, lambda: app.result is not None)
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen) and app.screen.topic == "search"
        body = str(app.screen.query_one("#help-body", Static).render())
        for words in ("leans oppose", "2/3 evidence", "strength", "phrasings", "under 0.65"):
            assert words in body
        await pilot.press("f1")  # F1 again closes it
        assert not isinstance(app.screen, HelpScreen)
        app.query_one("#support-list", ListView).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen) and app.screen.topic == "detail"
        body = str(app.screen.query_one("#help-body", Static).render())
        assert "supports" in body and "related" in body and "relevance" in body
        await pilot.press("escape")
        assert isinstance(app.screen, DetailScreen)
        await pilot.press("escape")
        from perspect.tui.widgets.compare_screen import CompareScreen

        app.push_screen(CompareScreen(_comparison()))
        await pilot.pause()
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen) and app.screen.topic == "compare"
        body = str(app.screen.query_one("#help-body", Static).render())
        assert "strengthens" in body and "weaken" in body and "underlined" in body


def _comparison():
    from types import SimpleNamespace as NS

    art = NS(title="A", sentences=["One.", "Two."])
    link = NS(a=0, b=1, relation="strengthens", rationale=((0, 3),))
    return NS(
        a=art,
        b=NS(title="B", sentences=["x.", "y."]),
        links=(link,),
        took_ms=5.0,
        share=lambda r: 0.5,
    )


async def test_right_arrow_on_an_empty_box_inserts_an_example():
    app = PerspectApp(FakeService(), show_timings=False)
    async with app.run_test(size=(100, 30)) as pilot:
        box = app.query_one("#claim")
        box.focus()
        await pilot.press("right")
        assert box.value == EXAMPLES[0] and box.cursor_position == len(EXAMPLES[0])
        box.value = ""
        await pilot.press("right")
        assert box.value == EXAMPLES[1]
        box.value = "Nuc"  # a prefix: → completes the suggested example
        box.cursor_position = 3
        await pilot.pause(0.2)  # the suggester answers asynchronously
        await pilot.press("right")
        assert box.value == "Nuclear power is the answer to climate change"


DRIVER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from tests.fake_service import FakeService
    from perspect.tui.app import run

    service = FakeService("stuck")

    async def auto_pilot(pilot):
        app = pilot.app
        app.query_one("#claim").focus()
        await pilot.press(*"Zoos should be closed", "enter")
        while not service.started.is_set():
            await pilot.pause(0.02)
        print("searching", flush=True)
        global t0
        t0 = time.monotonic()
        await pilot.press("ctrl+q")

    t0 = None
    run(service, headless=True, auto_pilot=auto_pilot)
    print("returned", flush=True)
    """
)


def test_quit_during_a_search_that_never_ends_exits_at_once(tmp_path):
    """The real `run` (as `perspect tui` calls it), in a fresh process, with a worker stuck for
    good: Ctrl+Q ends the process within seconds instead of blanking the screen and hanging."""
    script = tmp_path / "drive.py"
    script.write_text(DRIVER.format(root=str(ROOT)))
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    took = time.monotonic() - t0
    assert "searching" in r.stdout, r.stdout + r.stderr
    assert r.returncode == 0, r.stderr
    assert "returned" not in r.stdout  # os._exit: the stuck thread was not waited for
    assert took < 20  # the process start and Textual's import are most of it
