"""The Perspect terminal UI: thin app; widgets in tui/widgets, styles in perspect.tcss.

The app talks to a `SearchService` (perspect.core.service): `perspect tui` injects the real
engine, tests a stand-in. Searches run in an exclusive thread worker that posts progress
messages; Esc cancels through a threading.Event the engine checks between stages, so the UI never
blocks on the models. Quitting never waits for a worker stuck in native code (see `run`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Header, ListView, ProgressBar, Static

from perspect.core.errors import Cancelled, PerspectError
from perspect.core.presentation.full_screen import before_full_screen
from perspect.core.presentation.render import plain
from perspect.core.result import SearchResult
from perspect.core.service import SearchService, ServiceStatus
from perspect.tui.messages import (
    CompareDone,
    ContextDone,
    CorrectionAsked,
    CorrectionDone,
    SearchDone,
    SearchFailed,
    SearchProgress,
)
from perspect.tui.widgets.claim_input import ClaimInput
from perspect.tui.widgets.cluster_item import ClusterItem
from perspect.tui.widgets.compare_screen import CompareScreen
from perspect.tui.widgets.context_screen import ContextScreen
from perspect.tui.widgets.coverage_bar import CoverageBar
from perspect.tui.widgets.detail_screen import DetailScreen
from perspect.tui.widgets.help_screen import HelpScreen
from perspect.tui.widgets.news_panel import NewsPanel
from perspect.tui.widgets.side_column import SideColumn
from perspect.tui.widgets.source_item import SourceItem


class PerspectApp(App[None]):
    CSS_PATH = "perspect.tcss"
    TITLE = "Perspect"
    SUB_TITLE = "diverse, substantiated perspectives"
    BINDINGS = [
        # priority: the claim box would otherwise take ctrl+s / F1 for itself
        Binding("ctrl+s", "export", "Export", priority=True),
        Binding("escape", "cancel", "Cancel"),
        Binding("f1", "help", "Help", priority=True),
        Binding("question_mark", "help", "Help", show=False),  # outside the claim box
        Binding("ctrl+q", "quit", "Quit"),
    ]

    def __init__(
        self,
        service: SearchService,
        export_dir: str | Path | None = None,
        show_timings: bool = True,
        compare: tuple[str | Path, str | Path] | None = None,
    ):
        """`service`: what answers searches and comparisons (perspect.api.PerspectService for
        the real engine); `compare`: two article files to open side by side at start."""
        super().__init__()
        self.service = service
        self.compare_paths = compare
        self.export_dir = Path(export_dir or ".")
        self.show_timings = show_timings
        self.info: ServiceStatus | None = None  # None: the index could not be opened
        self.result: SearchResult | None = None
        self._cancel: threading.Event | None = None
        self._busy = 0  # worker bodies running (threads `run` will not wait for when stuck)
        self._busy_lock = threading.Lock()
        self._marked: tuple[str, str] | None = None  # (id, text) waiting for its "same" partner
        self._last_fix: tuple[dict, str] | None = None  # the last correction, for `u` (undo)
        self._confirm: str | None = None  # said on the status line once the search shows it

    def compose(self) -> ComposeResult:
        yield Header()
        yield ClaimInput(id="claim")
        with Horizontal(id="status-row"):
            yield ProgressBar(id="progress", total=1.0, show_eta=False, show_percentage=False)
            yield Static("", id="status")
        yield CoverageBar(id="coverage")
        with Horizontal(id="sides"):
            yield SideColumn("Support", "support", id="support")
            yield SideColumn("Oppose", "oppose", id="oppose")
            yield SideColumn("Unclear", "unclear", id="unclear")
        yield NewsPanel(id="news")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(NewsPanel).display = False
        self.query_one("#unclear", SideColumn).display = False  # shown when a search has some
        if self.compare_paths is not None:
            self._status("comparing the two articles (loading the comparator) …")
            self.run_compare(*self.compare_paths)
        try:
            self.info = info = self.service.status()
        except PerspectError as e:
            self._status(
                f"[red]{lit(e.message)}[/]" + (f"\n[dim]fix: {lit(e.hint)}[/]" if e.hint else "")
            )
            return
        pools = ", ".join(f"{p} {n:,}" for p, n in info.pools.items())
        note = (
            ""
            if info.has_models
            else ("  [yellow]no trained models: retrieval only (fix: make models)[/]")
        )
        self._status(f"index [b]{lit(info.index)}[/]: {pools}{note}  · F1 explains the screen")
        self.query_one(ClaimInput).focus()

    def _status(self, markup: str) -> None:
        self.query_one("#status", Static).update(markup)

    # -- searching -------------------------------------------------------------------------------
    def on_input_submitted(self, event: ClaimInput.Submitted) -> None:
        claim = event.value.strip()
        if self.info is None:
            self.notify("no index is open", severity="error")
            return
        from perspect.core.types import validate_claim

        try:
            claim = validate_claim(claim)
        except PerspectError as e:
            self.notify(lit(e.message), severity="warning")
            return
        self.query_one(ClaimInput).remember(claim)
        if self._cancel is not None:
            self._cancel.set()
        self._cancel = threading.Event()
        self.query_one(ProgressBar).update(progress=0.0)
        self._status(f"searching “{lit(claim)}” …")
        self.run_search(claim, self._cancel)

    @work(thread=True, exclusive=True, group="search")
    def run_search(self, claim: str, cancel: threading.Event) -> None:
        def progress(stage: str, fraction: float) -> None:
            if not cancel.is_set():
                self.post_message(SearchProgress(stage, fraction, cancel))

        with self._working():
            info = self.info
            if info is not None and info.has_models and not info.models_loaded:
                progress("loading the models (first search only)", 0.0)
            try:
                res = self.service.search(claim, progress=progress, cancel=cancel)
            except Cancelled:
                self.post_message(SearchFailed("search cancelled", search=cancel))
            except PerspectError as e:
                self.post_message(SearchFailed(e.message, e.hint, cancel))
            else:
                if info is not None and not info.models_loaded:
                    self.info = replace(info, models_loaded=True)
                if not cancel.is_set():
                    self.post_message(SearchDone(res, cancel))

    @work(thread=True, exclusive=True, group="compare")
    def run_compare(self, a, b) -> None:
        with self._working():
            try:
                self.post_message(CompareDone(self.service.compare(a, b)))
            except PerspectError as e:
                self.post_message(SearchFailed(e.message, e.hint))

    @contextmanager
    def _working(self) -> Iterator[None]:
        """Counts a worker body while it runs: `run` asks whether one is still inside."""
        with self._busy_lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._busy_lock:
                self._busy -= 1

    @property
    def busy(self) -> bool:
        with self._busy_lock:
            return self._busy > 0

    def on_compare_done(self, msg: CompareDone) -> None:
        self._status("comparison ready (Esc goes back to the search)")
        self.push_screen(CompareScreen(msg.comparison))

    def _stale(self, search: threading.Event | None) -> bool:
        """A message of a search the user cancelled or replaced: dropped."""
        return search is not None and (search is not self._cancel or search.is_set())

    def on_search_progress(self, msg: SearchProgress) -> None:
        if self._stale(msg.search):
            return
        self.query_one(ProgressBar).update(progress=msg.fraction)
        self._status(f"{msg.stage} …")

    async def on_search_done(self, msg: SearchDone) -> None:
        if self._stale(msg.search):
            return
        self.result = res = msg.result
        if not res.clusters and res.hits and self.info is not None and not self.info.has_models:
            await self.query_one("#support", SideColumn).show_hits(
                res.hits, "Retrieved (no models: no stance)"
            )
            await self.query_one("#oppose", SideColumn).show(())
        else:
            await self.query_one("#support", SideColumn).show(res.side("support"), res.news_for)
            await self.query_one("#oppose", SideColumn).show(res.side("oppose"), res.news_for)
        third = self.query_one("#unclear", SideColumn)
        if res.related:
            await third.show_related(res.related)
        else:
            await third.show(res.side("unclear"))
        third.display = bool(res.related or res.side("unclear"))
        self.query_one(CoverageBar).show(
            res.coverage, reading=res.second_reading, spread=res.spread
        )
        self.query_one(NewsPanel).show(
            res.news, {c.representative.id: c.representative.text for c in res.clusters}
        )
        self.query_one(ProgressBar).update(progress=1.0)
        took = f" in {res.took_ms:.0f} ms" if self.show_timings else ""
        n = len(res.clusters)
        self._status(
            f"{n} perspective{'s' if n != 1 else ''}{took} · Tab to a column, Enter opens one"
        )
        if self._confirm:
            self._status(f"✓ corrected: {self._confirm} (u undoes)")
            self._confirm = None
        if not res.clusters and res.hits:
            self._status(lit(res.coverage.warning))

    def on_search_failed(self, msg: SearchFailed) -> None:
        if msg.search is not None and msg.search is not self._cancel:
            return  # an earlier search's end; the one on screen is newer
        self.query_one(ProgressBar).update(progress=0.0)
        self._status(
            f"[red]{lit(msg.error)}[/]" + (f"  [dim]fix: {lit(msg.hint)}[/]" if msg.hint else "")
        )

    # -- corrections ---------------------------------------------------------------------------
    def on_correction_asked(self, msg: CorrectionAsked) -> None:
        if self.result is None:
            return
        claim = self.result.claim
        if msg.same is not None:
            if self._marked is None or self._marked[0] == msg.same:
                self._marked = (msg.perspective, msg.text)
                self._status(
                    f"marked “{lit(msg.text)}”: press m on another perspective to say they make "
                    "one point"
                )
                return
            fix = {"claim": claim, "same": (self._marked[0], msg.perspective)}
            said = f"“{lit(self._marked[1])}” and “{lit(msg.text)}” make one point"
            self._marked = None
        else:
            fix = {"claim": claim, "perspective": msg.perspective, "side": msg.side}
            said = f"“{lit(msg.text)}” is {'off-topic' if msg.side == 'off-topic' else 'on ' + msg.side}"
        self.run_correction(fix, said)

    def action_undo_correction(self) -> None:
        if self._last_fix is None:
            self.notify("no correction to undo", severity="warning")
            return
        fix, said = self._last_fix
        self._last_fix = None
        self.run_correction({**fix, "undo": True}, f"undone: {said}")

    @work(thread=True, exclusive=True, group="correct")
    def run_correction(self, fix: dict, said: str) -> None:
        """Store the correction (sqlite, milliseconds), then search the claim again to show it."""
        with self._working():
            try:
                self.service.correct(**fix)
            except PerspectError as e:
                self.post_message(CorrectionDone(said, error=e.message))
                return
            if not fix.get("undo"):
                self._last_fix = (fix, said)
            self.post_message(CorrectionDone(said))

    def on_correction_done(self, msg: CorrectionDone) -> None:
        if msg.error:
            self._status(f"[red]{lit(msg.error)}[/]")
            return
        self.notify(f"✓ {msg.said}")
        self._confirm = msg.said
        self._status(f"✓ corrected: {msg.said} (u undoes) · showing it …")
        claim = self.result.claim if self.result else None
        if claim:
            if self._cancel is not None:
                self._cancel.set()
            self._cancel = threading.Event()
            self.run_search(claim, self._cancel)

    # -- actions ---------------------------------------------------------------------------------
    def on_list_view_selected(self, event: ListView.Selected) -> None:
        if isinstance(event.item, ClusterItem):
            news = self.result.news_for(event.item.cluster) if self.result else ()
            self.push_screen(DetailScreen(event.item.cluster, news))
        elif isinstance(event.item, SourceItem) and event.item.member.source is not None:
            self.run_context(event.item.member.id, event.item.member.source.pool)

    @work(thread=True, exclusive=True, group="context")
    def run_context(self, sentence_id: str, pool: str) -> None:
        """The mined sentence's article from the index (a lookup: milliseconds)."""
        with self._working():
            try:
                self.post_message(ContextDone(self.service.context(sentence_id, pool)))
            except PerspectError as e:
                self.post_message(SearchFailed(e.message, e.hint))

    def on_context_done(self, msg: ContextDone) -> None:
        self.push_screen(ContextScreen(msg.context))

    def action_cancel(self) -> None:
        """Cancelled at once on screen: the worker stops at its next check (the engine checks
        between stages); whatever it posts afterwards for this search is dropped."""
        if self._cancel is not None and not self._cancel.is_set():
            self._cancel.set()
            self.query_one(ProgressBar).update(progress=0.0)
            self._status("search cancelled")

    async def action_quit(self) -> None:
        """Quit now: a running search is told to stop, and `run` does not wait for it."""
        if self._cancel is not None:
            self._cancel.set()
        self.exit()

    def action_help(self) -> None:
        """The help of the screen on top (search, detail, compare); F1 on the help closes it."""
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss()
            return
        self.push_screen(HelpScreen(getattr(self.screen, "HELP_TOPIC", "search")))

    def action_export(self) -> None:
        if self.result is None:
            self.notify("nothing to export yet: search first", severity="warning")
            return
        from perspect.core.presentation.render import to_markdown

        stem = self.export_dir / f"perspect-{time.strftime('%Y%m%d-%H%M%S')}"
        self.export_dir.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".md").write_text(to_markdown(self.result), encoding="utf-8")
        stem.with_suffix(".json").write_text(
            json.dumps(self.result.to_json(), indent=2, ensure_ascii=False), encoding="utf-8"
        )
        self.notify(f"exported {lit(stem)}.md and {lit(stem)}.json")


def run(
    service: SearchService,
    compare: tuple[str, str] | None = None,
    *,
    headless: bool = False,
    auto_pilot=None,
    grace_s: float = 1.0,
    end_process: bool = False,
) -> None:
    """Run the app until the user quits, then return within `grace_s` seconds even if a worker
    thread is stuck in native code. Two waits would otherwise hang the process after the
    screen is gone: asyncio.run joins the default executor (where Textual runs thread workers),
    and so does the interpreter at exit. The app runs on a loop of its own, so that returning
    does not join it; a worker still inside after `grace_s` ends the process with os._exit
    once the terminal is restored (the index is only read, and pinned versions are released
    by the OS with the process). `end_process` (the CLI) ends it that way in any case: the
    interpreter's teardown of torch and ONNX Runtime took 1.7 s after the screen closed, and
    nothing of the UI lives only in memory (exports are written when made)."""
    before_full_screen()
    app = PerspectApp(service, compare=compare)
    loop = asyncio.new_event_loop()
    try:
        app.run(loop=loop, headless=headless, auto_pilot=auto_pilot)
    finally:
        deadline = time.monotonic() + grace_s
        while app.busy and time.monotonic() < deadline:
            time.sleep(0.02)
        if app.busy or end_process:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(app.return_code or 0)
        loop.close()


def lit(text: object) -> str:
    """Data shown literally in Textual markup: controls visible, every "[" escaped. Textual's
    own `escape` escapes complete tags only: a claim like "[@=" opened a tag the surrounding
    markup never closed (MarkupError, found by tests/test_fuzz.py)."""
    return plain(text).replace("[", "\\[")
