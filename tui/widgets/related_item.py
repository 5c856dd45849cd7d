"""One near miss, shown when no perspective passed the relevance cut: marked as low confidence,
with its relevance, so an empty screen never hides what the pool holds on the claim."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Label, ListItem

from perspect.core.presentation.render import plain
from perspect.core.result import Member


class RelatedItem(ListItem):
    def __init__(self, member: Member) -> None:
        self.member = member
        super().__init__(Label(self._text(), markup=False))

    def _text(self) -> Text:
        t = Text()
        t.append("~ ", style="yellow")
        t.append(plain(self.member.text))
        t.append(
            f"\n  low confidence · relevance {self.member.relevance:.2f} · id "
            f"{plain(self.member.id)}",
            style="dim",
        )
        return t
