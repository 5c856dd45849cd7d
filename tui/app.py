"""The Perspect terminal UI: thin app; widgets in tui/widgets, styles in perspect.tcss.

Searches run in an exclusive thread worker that posts progress messages; Esc cancels through a
threading.Event the engine checks between stages, so the UI never blocks on the models.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widgets import Footer, Header, ListView, ProgressBar, Static

from perspect.core.errors import Cancelled, PerspectError
from perspect.core.render import plain
from perspect.core.result import SearchResult
from perspect.tui.messages import CompareDone, SearchDone, SearchFailed, SearchProgress
from perspect.tui.widgets.claim_input import ClaimInput
from perspect.tui.widgets.cluster_item import ClusterItem
from perspect.tui.widgets.compare_screen import CompareScreen
from perspect.tui.widgets.coverage_bar import CoverageBar
from perspect.tui.widgets.detail_screen import DetailScreen
from perspect.tui.widgets.help_screen import HelpScreen
from perspect.tui.widgets.news_panel import NewsPanel
from perspect.tui.widgets.side_column import SideColumn


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
        index: str = "default",
        home: str | Path | None = None,
        model: str | Path | None = None,
        export_dir: str | Path | None = None,
        show_timings: bool = True,
        compare: tuple[str | Path, str | Path] | None = None,
        fast: bool = False,
    ):
        """`compare`: two article files to open side by side (the compare screen) at start;
        `fast`: the engine's fast preset (perspect search --fast)."""
        super().__init__()
        self.compare_paths = compare
        self.fast = fast
        self.index_name, self.home, self.model_dir = index, home, model
        self.export_dir = Path(export_dir or ".")
        self.show_timings = show_timings
        self.perspect = None
        self.result: SearchResult | None = None
        self._cancel: threading.Event | None = None

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
        yield NewsPanel(id="news")
        yield Footer()

    def on_mount(self) -> None:
        from perspect.api import Perspect

        if self.compare_paths is not None:
            self._status("comparing the two articles (loading the comparator) …")
            self.run_compare(*self.compare_paths)
        try:
            self.perspect = Perspect.open(
                self.index_name, home=self.home, model=self.model_dir, fast=self.fast
            )
        except PerspectError as e:
            self._status(
                f"[red]{lit(e.message)}[/]" + (f"\n[dim]fix: {lit(e.hint)}[/]" if e.hint else "")
            )
            return
        pools = ", ".join(f"{p} {n:,}" for p, n in self.perspect.pools.items())
        note = (
            ""
            if self.perspect.has_models
            else ("  [yellow]no trained models: retrieval only (fix: make models)[/]")
        )
        self._status(f"index [b]{lit(self.index_name)}[/]: {pools}{note}")
        self.query_one(ClaimInput).focus()
        self.query_one(NewsPanel).display = False

    def _status(self, markup: str) -> None:
        self.query_one("#status", Static).update(markup)

    # -- searching -------------------------------------------------------------------------------
    def on_input_submitted(self, event: ClaimInput.Submitted) -> None:
        claim = event.value.strip()
        if self.perspect is None:
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
            self.post_message(SearchProgress(stage, fraction, cancel))

        if not self.perspect.models_loaded and self.perspect.has_models:
            progress("loading the models (first search only)", 0.0)
        try:
            res = self.perspect.search(claim, progress=progress, cancel=cancel)
        except Cancelled:
            self.post_message(SearchFailed("search cancelled", search=cancel))
        except PerspectError as e:
            self.post_message(SearchFailed(e.message, e.hint, cancel))
        else:
            if not cancel.is_set():
                self.post_message(SearchDone(res, cancel))

    @work(thread=True, exclusive=True, group="compare")
    def run_compare(self, a, b) -> None:
        from perspect import api

        try:
            self.post_message(CompareDone(api.compare(a, b)))
        except PerspectError as e:
            self.post_message(SearchFailed(e.message, e.hint))

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
        if not res.clusters and res.hits and not self.perspect.has_models:
            await self.query_one("#support", SideColumn).show_hits(
                res.hits, "Retrieved (no models: no stance)"
            )
            await self.query_one("#oppose", SideColumn).show(())
        else:
            await self.query_one("#support", SideColumn).show(res.side("support"))
            await self.query_one("#oppose", SideColumn).show(res.side("oppose"))
        self.query_one(CoverageBar).show(res.coverage)
        self.query_one(NewsPanel).show(
            res.news, {c.representative.id: c.representative.text for c in res.clusters}
        )
        self.query_one(ProgressBar).update(progress=1.0)
        took = f" in {res.took_ms:.0f} ms" if self.show_timings else ""
        n = len(res.clusters)
        self._status(
            f"{n} perspective{'s' if n != 1 else ''}{took} · Tab to a column, Enter opens one"
        )
        if not res.clusters and res.hits:
            self._status(lit(res.coverage.warning))

    def on_search_failed(self, msg: SearchFailed) -> None:
        if msg.search is not None and msg.search is not self._cancel:
            return  # an earlier search's end; the one on screen is newer
        self.query_one(ProgressBar).update(progress=0.0)
        self._status(
            f"[red]{lit(msg.error)}[/]" + (f"  [dim]fix: {lit(msg.hint)}[/]" if msg.hint else "")
        )

    # -- actions ---------------------------------------------------------------------------------
    def on_list_view_selected(self, event: ListView.Selected) -> None:
        if isinstance(event.item, ClusterItem):
            news = self.result.news_for(event.item.cluster) if self.result else ()
            self.push_screen(DetailScreen(event.item.cluster, news))

    def action_cancel(self) -> None:
        """Cancelled at once on screen: the worker may still be loading the models (seconds, not
        interruptible); whatever it posts afterwards for this search is dropped."""
        if self._cancel is not None and not self._cancel.is_set():
            self._cancel.set()
            self.query_one(ProgressBar).update(progress=0.0)
            self._status("search cancelled")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_export(self) -> None:
        if self.result is None:
            self.notify("nothing to export yet: search first", severity="warning")
            return
        from perspect.core.render import to_markdown

        stem = self.export_dir / f"perspect-{time.strftime('%Y%m%d-%H%M%S')}"
        self.export_dir.mkdir(parents=True, exist_ok=True)
        stem.with_suffix(".md").write_text(to_markdown(self.result), encoding="utf-8")
        stem.with_suffix(".json").write_text(
            json.dumps(self.result.to_json(), indent=2, ensure_ascii=False), encoding="utf-8"
        )
        self.notify(f"exported {lit(stem)}.md and {lit(stem)}.json")


def run(
    index: str = "default",
    home: str | None = None,
    model: str | None = None,
    compare: tuple[str, str] | None = None,
    fast: bool = False,
) -> None:
    PerspectApp(index=index, home=home, model=model, compare=compare, fast=fast).run()


def lit(text: object) -> str:
    """Data shown literally in Textual markup: controls visible, every "[" escaped. Textual's
    own `escape` escapes complete tags only: a claim like "[@=" opened a tag the surrounding
    markup never closed (MarkupError, found by tests/test_fuzz.py)."""
    return plain(text).replace("[", "\\[")
