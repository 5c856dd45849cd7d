"""One mined phrasing in a perspective's detail: its sentence and the article it came from;
Enter opens that sentence in its article (widgets.context_screen)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Label, ListItem

from perspect.core.presentation.render import plain
from perspect.core.result import Member


class SourceItem(ListItem):
    def __init__(self, member: Member) -> None:
        self.member = member
        super().__init__(Label(self._text(), markup=False))

    def _text(self) -> Text:
        m = self.member
        t = Text()
        t.append(f"“{plain(m.text)}”\n")
        if m.source is not None:
            t.append(f"  {plain(m.source.label)}", style="cyan")
            if m.source.url:
                t.append(f"  {plain(m.source.url)}", style="dim")
        return t
