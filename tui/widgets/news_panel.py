"""News sentences that strengthen or weaken the claim, under the two sides; hidden when a search
found none (an index without news, or news that bears on nothing: no noise on screen)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from perspect.core.render import plain
from perspect.core.result import NewsItem


def news_text(items: tuple[NewsItem, ...], cluster_of=None) -> Text:
    """Each sentence with its relation, outlet and date, rationale words underlined; `cluster_of`
    (representative id -> its text) names the perspective a sentence bears on most."""
    t = Text()
    for n in items:
        colour = "green" if n.relation == "strengthens" else "red"
        t.append(f"{n.relation} ({n.probability:.2f}) ", style=f"bold {colour}")
        src = " · ".join(str(x) for x in (n.metadata.get("outlet"), n.metadata.get("date")) if x)
        if src:
            t.append(plain(src), style="dim")
        t.append("\n  ")
        at = 0
        for s, e in n.rationale:
            t.append(plain(n.text[at:s]))
            t.append(plain(n.text[s:e]), style="bold underline")
            at = e
        t.append(plain(n.text[at:]) + "\n")
        title = n.metadata.get("title")
        if title:
            t.append(f"  {plain(title)}\n", style="dim italic")
        if cluster_of and n.cluster in cluster_of:
            t.append(
                f"  {n.cluster_relation} “{plain(cluster_of[n.cluster])}”\n", style=f"dim {colour}"
            )
    return t


class NewsPanel(VerticalScroll):
    def compose(self) -> ComposeResult:
        yield Label("News", classes="side-title", id="news-title")
        yield Static("", id="news-body")

    def show(self, items: tuple[NewsItem, ...], cluster_of: dict[str, str] | None = None) -> None:
        self.display = bool(items)
        self.query_one("#news-title", Label).update(
            f"News that strengthens or weakens the claim ({len(items)})"
        )
        self.query_one("#news-body", Static).update(news_text(items, cluster_of))
