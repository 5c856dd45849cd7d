"""Two articles side by side: each sentence of A that strengthens (green) or weakens (red) a
sentence of B is numbered, and the sentence of B it bears on carries the same number and colour;
rationale words are underlined. The comparison runs in a worker (models, then the comparator)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Label, Static

from perspect.core.presentation.render import plain

COLOURS = {"strengthens": "green", "weakens": "red"}


def article_text(sentences, marks: dict[int, list[tuple[int, str]]], spans=None) -> Text:
    """Sentences one per paragraph; a linked one starts with its link numbers in its colour."""
    t = Text()
    for i, s in enumerate(sentences):
        got = marks.get(i, [])
        if got:
            colour = COLOURS[got[0][1]]
            t.append(" ".join(f"[{n}]" for n, _ in got) + " ", style=f"bold {colour}")
            at = 0
            for a, b in (spans or {}).get(i, ()):
                t.append(plain(s[at:a]), style=colour)
                t.append(plain(s[a:b]), style=f"{colour} bold underline")
                at = b
            t.append(plain(s[at:]) + "\n\n", style=colour)
        else:
            t.append(plain(s) + "\n\n", style="dim")
    return t


class CompareScreen(Screen[None]):
    HELP_TOPIC = "compare"  # F1 explains this screen (help_screen.COMPARE)
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "back"),
        Binding("question_mark", "app.help", "help"),
    ]

    def __init__(self, comparison) -> None:
        super().__init__()
        self.comparison = comparison

    def compose(self) -> ComposeResult:
        c = self.comparison
        marks_a: dict[int, list[tuple[int, str]]] = {}
        marks_b: dict[int, list[tuple[int, str]]] = {}
        spans: dict[int, tuple] = {}
        for n, x in enumerate(c.links, start=1):
            marks_a.setdefault(x.a, []).append((n, x.relation))
            marks_b.setdefault(x.b, []).append((n, x.relation))
            spans[x.a] = x.rationale
        yield Label(
            f"A strengthens B in {100 * c.share('strengthens'):.0f}% of its sentences, weakens "
            f"it in {100 * c.share('weakens'):.0f}% · {len(c.links)} links · "
            f"{c.took_ms / 1000:.1f} s",
            id="compare-summary",
        )
        with Horizontal(id="compare-sides"):
            with VerticalScroll(id="compare-a", classes="compare-col"):
                yield Label(f"A: {plain(c.a.title)}", classes="side-title")
                yield Static(article_text(c.a.sentences, marks_a, spans), id="compare-a-body")
            with VerticalScroll(id="compare-b", classes="compare-col"):
                yield Label(f"B: {plain(c.b.title)}", classes="side-title")
                yield Static(article_text(c.b.sentences, marks_b), id="compare-b-body")
        yield Footer()
