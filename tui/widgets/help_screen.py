"""F1 / `?`: what the screen underneath shows and which keys work there. One text per screen,
because a first-time reader's question is "what does this bar / word / colour mean here", and the
compare screen shares none of the search screen's numbers."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

SEARCH = """[b]Perspect — the search screen[/b]

Type a contentious claim; Perspect finds perspectives on it (arguments for or against), merges
phrasings of the same point into one, sorts them by side and links evidence paragraphs to them.

[b]What you see[/b]
  [green]Support (n)[/] / [red]Oppose (n)[/]  perspectives that argue for / against the claim
  [green]█████[/][dim]░░░[/]  strength: how sure the model is of the side, from 0.50 (undecided,
              empty bar) to 1.00 (certain, full bar); green supports, red opposes
  [b]support 0.84[/]  the side and that strength as a number (a calibrated probability)
  [b]leans oppose[/]  strength under 0.65: a guess about the side, not a verdict
  [b]3 phrasings[/]   equivalent wordings merged into this perspective (Enter lists them)
  [b]2/3 evidence[/]  3 paragraphs linked to it, 2 of which the model says back it
  coverage bar    how many perspectives each side has; ⚠ warns when one side is thin
  News panel      news sentences that [green]strengthen[/] or [red]weaken[/] the claim, with the
                  probability; [u]underlined[/] words are what carries it (only with news)
  top line        progress of a running search, then the count and time of the answer

[b]Keys[/b]
  [b]Enter[/b]        search (claim box) / open the selected perspective (column)
  [b]↑ ↓[/b]          older / newer claims (claim box); move between perspectives (column)
  [b]→[/b]            complete the example the box suggests; on an empty box, insert one
  [b]Tab[/b]          next pane: claim box → Support → Oppose
  [b]Esc[/b]          cancel a running search
  [b]Ctrl+S[/b]       export the answer as Markdown and JSON (current folder)
  [b]F1 / ?[/b]       this help (? outside the claim box, where it is typed)
  [b]Ctrl+Q[/b]       quit (at once, even during a search)
"""

DETAIL = """[b]Perspect — one perspective[/b]

[b]What you see[/b]
  [b]SUPPORT / OPPOSE[/b]   the side of the claim this perspective takes ([b]LEANS …[/b]: strength
                     under 0.65, a guess); green supports, red opposes
  [b]strength 0.84[/b]      how sure the model is of that side: 0.50 undecided .. 1.00 certain
  [b]relevance 0.91[/b]     how likely the leading phrasing is a real perspective on the claim
  [b]Phrasings[/b]          every wording merged into this perspective; [dim]\\[id, source; rel][/] is
                     its id in the pool, where it comes from and its own relevance
  [b]Evidence[/b]           paragraphs linked to the perspective:
      [green]supports (0.81)[/]  the model says it backs the perspective (probability)
      [yellow]related (0.40)[/]   on the topic, but not judged to back it
  [b]News[/b]               news sentences that [green]strengthen[/] or [red]weaken[/] it; [u]underlined[/]
                     words carry the relation; outlet and date in grey

[b]Keys[/b]
  [b]↑ ↓ PgUp PgDn[/b]  scroll
  [b]Esc / q / Enter[/b]  back to the search
  [b]F1 / ?[/b]       this help    [b]Ctrl+Q[/b]  quit
"""

COMPARE = """[b]Perspect — two articles compared[/b]

Each sentence of article A is compared with the sentences of article B it is close to.

[b]What you see[/b]
  top line        share of A's sentences that strengthen / weaken some sentence of B, the
                  number of links and the time taken
  [green]\\[3] sentence[/]    in A: strengthens a sentence of B (green); in B: the sentence that
                  link 3 bears on, with the same number and colour
  [red]\\[4] sentence[/]    the same for a sentence of A that weakens (disputes) one of B
  [u]underlined[/]      in A, the words that carry the relation
  [dim]grey sentences[/]  no link either way

[b]Keys[/b]
  [b]Tab[/b]          switch between A and B    [b]↑ ↓ PgUp PgDn[/b]  scroll
  [b]Esc / q[/b]      back to the search
  [b]F1 / ?[/b]       this help    [b]Ctrl+Q[/b]  quit
"""

TOPICS = {"search": SEARCH, "detail": DETAIL, "compare": COMPARE}


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "close")]

    def __init__(self, topic: str = "search") -> None:
        super().__init__()
        self.topic = topic if topic in TOPICS else "search"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(TOPICS[self.topic], id="help-body")
