"""One retrieved perspective, shown when no models are installed (retrieval only): what the CLI
prints in that case, so the screen is never emptier than the command line."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Label, ListItem

from perspect.core.presentation.render import plain
from perspect.core.types import Hit


class HitItem(ListItem):
    def __init__(self, hit: Hit) -> None:
        self.hit = hit
        super().__init__(Label(self._text(), markup=False))

    def _text(self) -> Text:
        t = Text()
        t.append(f"{self.hit.rank:>2}. ", style="dim")
        t.append(plain(self.hit.text))
        t.append(f"\n    score {self.hit.score:.2f} · id {plain(self.hit.id)}", style="dim")
        return t
