"""`?`: the key bindings."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

HELP = """[b]Perspect — keys[/b]

  [b]Enter[/b]        search the claim (in the claim box) / open a cluster (in a column)
  [b]↑ ↓[/b]          claim history (claim box) / move between clusters (columns)
  [b]→[/b]            accept the suggested example claim
  [b]Tab[/b]          next pane: claim → Support → Oppose
  [b]Esc[/b]          cancel a running search / close a dialog
  [b]Ctrl+S[/b]       export the result as Markdown and JSON
  [b]? / F1[/b]       this help (F1 also inside the claim box, where ? is typed)
  [b]Ctrl+Q[/b]       quit
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        yield Static(HELP, id="help-body")
