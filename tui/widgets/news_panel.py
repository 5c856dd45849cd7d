"""News sentences that strengthen or weaken the claim, under the two sides; hidden when a search
found none (an index without news, or news that bears on nothing: no noise on screen)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from perspect.core.presentation.render import also_in, plain
from perspect.core.result import NewsItem


def source_line(n: NewsItem) -> Text:
    """The sentence's article: outlet (leaning) · date · title (each when known)."""
    t = Text()
    outlet = n.metadata.get("outlet")
    parts = [
        (f"{outlet} ({n.leaning})" if outlet else n.leaning, "bold"),
        (n.metadata.get("date"), "dim"),
        (n.metadata.get("title"), "italic"),
    ]
    for value, style in (p for p in parts if p[0]):
        if t:
            t.append(" · ", style="dim")
        t.append(plain(str(value)), style=style)
    return t


def news_text(items: tuple[NewsItem, ...], cluster_of=None) -> Text:
    """Each sentence under its relation and its article (outlet · date · title), rationale words
    underlined; `cluster_of` (representative id -> its text) names the perspective a sentence
    bears on most."""
    t = Text()
    for n in items:
        colour = "green" if n.relation == "strengthens" else "red"
        t.append(f"{n.relation} ({n.probability:.2f}) ", style=f"bold {colour}")
        t.append_text(source_line(n))
        t.append("\n  ")
        at = 0
        for s, e in n.rationale:
            t.append(plain(n.text[at:s]))
            t.append(plain(n.text[s:e]), style="bold underline")
            at = e
        t.append(plain(n.text[at:]))
        if n.also:  # the same words in other articles (wire copies), listed once
            t.append(f" ({also_in(n)})", style="dim")
        t.append("\n")
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
