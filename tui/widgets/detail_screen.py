"""A cluster opened: all phrasings, evidence paragraphs with verdicts and scores, metadata, and
the news sentences that strengthen or weaken it (rationale words underlined). Phrasings mined
from the reader's documents or the news are listed first with their sources; Enter on one opens
it in its article (the app asks the service: widgets.context_screen)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, ListView, Static

from perspect.core.presentation.render import NO_REASON, plain
from perspect.core.result import NewsItem, PerspectiveCluster
from perspect.tui.widgets.news_panel import news_text
from perspect.tui.widgets.source_item import SourceItem


class DetailScreen(ModalScreen[None]):
    HELP_TOPIC = "detail"  # F1 explains this screen (help_screen.DETAIL)
    BINDINGS = [
        Binding("escape,q,enter", "dismiss", "close"),
        Binding("question_mark", "app.help", "help"),
    ]

    def __init__(self, cluster: PerspectiveCluster, news: tuple[NewsItem, ...] = ()) -> None:
        super().__init__()
        self.cluster = cluster
        self.news = news

    def compose(self) -> ComposeResult:
        c = self.cluster
        t = Text()
        colour = {"support": "green", "oppose": "red"}.get(c.stance, "yellow")
        t.append(f"{c.side_label.upper()}  ", style=f"bold {colour}")
        t.append(f"strength {c.strength:.2f} · relevance {c.representative.relevance:.2f}\n\n")
        t.append("Phrasings\n", style="bold underline")
        for m in c.members:
            src = m.source.label if m.source is not None else m.metadata.get("source")
            t.append(f" • {plain(m.text)}")
            if m.corrected:
                t.append(" ✎ corrected by a reader", style="bold cyan")
            if m.mined:
                t.append(" ↳ mined", style="cyan")
            t.append(
                f"  [{plain(m.id)}{', ' + plain(src) if src else ''}; rel {m.relevance:.2f}]\n",
                style="dim",
            )
        if c.why is not None:
            t.append("\nWhy\n", style="bold underline")
            t.append(f" “{plain(c.why.sentence)}”", style="italic")
            t.append(f"  [{plain(c.why.cited_from)}]\n", style="dim")
        elif c.evidence:
            t.append("\nWhy\n", style="bold underline")
            t.append(f" {NO_REASON}: no paragraph below is judged to support it\n", style="dim")
        t.append("\nEvidence\n", style="bold underline")
        if not c.evidence:
            t.append(" none retrieved\n", style="dim")
        for e in c.evidence:
            style = {"supports": "green", "contradicts": "red"}.get(e.verdict, "yellow")
            label = "argues against" if e.verdict == "contradicts" else e.verdict
            t.append(f" {label} ({e.score:.2f})", style=style)
            meta = plain(", ".join(f"{k}: {v}" for k, v in e.metadata.items()))
            t.append(f"  [{plain(e.id)}{'; ' + meta if meta else ''}]\n", style="dim")
            # the cited sentence, highlighted (a reason from a document or the news is not here)
            if c.why is not None and c.why.source is None and c.why.evidence == e.id:
                s, end = c.why.span
                t.append(f"   {plain(e.text[:s])}")
                t.append(plain(e.text[s:end]), style="bold underline")
                t.append(f"{plain(e.text[end:])}\n\n")
            else:
                t.append(f"   {plain(e.text)}\n\n")
        if self.news:
            t.append("\nNews on this perspective\n", style="bold underline")
            t.append_text(news_text(self.news))
        mined = [m for m in c.members if m.mined]
        with VerticalScroll(id="detail-box"):
            if mined:
                n = len(c.sources)
                yield Label(
                    f"Mined from {n} source{'s' if n != 1 else ''} (Enter opens one in its "
                    "article)",
                    classes="sources-title",
                )
                yield ListView(*(SourceItem(m) for m in mined), id="sources")
            yield Static(t, id="detail-body")

    def on_mount(self) -> None:
        found = self.query("#sources")
        if found:
            found.first(ListView).focus()
