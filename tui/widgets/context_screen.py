"""A mined sentence in its article: the article's title, outlet, date and URL, then its sentences
in order with the mined one marked and scrolled to, so a reader judges it in its context."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from perspect.core.presentation.render import plain
from perspect.core.result import SourceContext


class ContextScreen(ModalScreen[None]):
    HELP_TOPIC = "context"  # F1 explains this screen (help_screen.CONTEXT)
    BINDINGS = [
        Binding("escape,q,enter", "dismiss", "close"),
        Binding("question_mark", "app.help", "help"),
    ]

    def __init__(self, context: SourceContext) -> None:
        super().__init__()
        self.context = context

    def compose(self) -> ComposeResult:
        c, s = self.context, self.context.source
        head = Text()
        head.append(f"{plain(s.title or s.article_id)}\n", style="bold")
        head.append(plain(" · ".join(x for x in (s.outlet, s.date) if x)), style="cyan")
        if s.url:
            head.append(f"\n{plain(s.url)}", style="dim")
        head.append(f"\n{c.pool}: sentence {c.focus + 1} of {len(c.sentences)}\n", style="dim")
        with VerticalScroll(id="context-box"):
            yield Static(head, id="context-head")
            for i, sentence in enumerate(c.sentences):
                style = "bold reverse" if i == c.focus else ""
                yield Static(
                    Text(plain(sentence), style=style),
                    id="context-focus" if i == c.focus else None,
                    classes="context-sentence",
                )

    def on_mount(self) -> None:
        self.query_one("#context-focus").scroll_visible(animate=False)
