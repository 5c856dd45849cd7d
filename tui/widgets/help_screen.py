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
  [green]Support (n)[/]       the n perspectives that argue for the claim
  [red]Oppose (n)[/]        the n perspectives that argue against it
  [green]█████[/][dim]░░░[/]          strength: how sure the model is of the side, from 0.50 (undecided,
                    empty bar) to 1.00 (certain, full bar); green supports, red opposes
  support 0.84      the side and that strength as a number (a calibrated probability)
  leans oppose      strength under 0.65: a guess about the side, not a verdict
  [yellow]Unclear (n)[/]       perspectives whose side the model cannot tell (too close to call on
                    claims it has not seen); shown apart, outside the coverage balance
  [yellow]Related, low confidence[/]  nothing passed the relevance cut: the closest candidates
  [i]“a sentence”[/]      why: the evidence sentence that best backs the perspective
  [bold cyan]✎ corrected[/]       a reader corrected this perspective for this claim
  3 phrasings       equivalent wordings merged into this perspective (Enter lists them)
  2/3 evidence      3 paragraphs linked to it, 2 of which the model says back it
  2 sources         an index with your documents: sentences mined from them (or the news)
                    make this point too, from 2 outlets; [cyan]↳ outlet · date · title[/] the
                    article a mined perspective comes from (Enter, then Enter on it: in context)
  coverage bar      how many perspectives each side has; ⚠ warns when one side is thin, or
                    comes only from mined sentences (of one outlet, maybe)
  News panel        news sentences that [green]strengthen[/] or [red]weaken[/] the claim, with the
                    probability; [u]underlined[/] words carry it (indexes with news only)
  status line       progress of a running search, then the count and time of the answer

[b]Keys[/b]
  Enter             search (claim box) / open the selected perspective (column)
  ↑ ↓               older / newer claims (claim box); move between perspectives (column)
  →                 complete the example the box suggests; on an empty box, insert one
  Tab               next pane: claim box → Support → Oppose
  s / o / x         (in a column) put the selected perspective on Support / Oppose, or mark it
                    off-topic, for this claim: stored with the index, shown on every later search
  m, then m         (in a column) on two perspectives: they make one point (merged)
  u                 (in a column) undo the last correction
  Esc               cancel a running search
  Ctrl+S            export the answer as Markdown and JSON (current folder)
  F1 / ?            this help (? outside the claim box, where it is typed)
  Ctrl+Q            quit (at once, even during a search)
"""

DETAIL = """[b]Perspect — one perspective[/b]

[b]What you see[/b]
  SUPPORT / OPPOSE  the side of the claim it takes (LEANS …: strength under 0.65, a guess);
                    green supports, red opposes
  strength 0.84     how sure the model is of that side: 0.50 undecided .. 1.00 certain
  relevance 0.91    how likely the leading phrasing is a real perspective on the claim
  Mined from …      the phrasings mined from your documents or the news, with their article
                    (outlet · date · title, URL); Enter on one shows it in its article
  Phrasings         every wording merged into this perspective; [dim]\\[id, source; rel][/] is its
                    id in the pool, where it comes from and its own relevance (mined: the
                    model's probability that it is an argument on the claim)
  Evidence          paragraphs linked to the perspective, best first; the number is the
                    model's probability that the paragraph backs it:
    [green]supports[/]        among the best links of this perspective and over the tuned cut
    [yellow]related[/]         on the topic, but not judged to back it
  News              news sentences that [green]strengthen[/] or [red]weaken[/] it; [u]underlined[/] words
                    carry the relation; outlet and date in grey

[b]Keys[/b]
  ↑ ↓ PgUp PgDn     scroll (move between mined phrasings, where listed)
  Enter             open the selected mined phrasing in its article
  Esc / q           back to the search (Enter too, without mined phrasings)
  F1 / ?            this help
  Ctrl+Q            quit
"""

CONTEXT = """[b]Perspect — a mined sentence in its article[/b]

[b]What you see[/b]
  the article's title, outlet, date and URL (what it said of itself), then all its sentences
  in order; the mined one is [reverse]highlighted[/]: judge it in its context

[b]Keys[/b]
  ↑ ↓ PgUp PgDn     scroll
  Esc / q / Enter   back
  F1 / ?            this help
"""

COMPARE = """[b]Perspect — two articles compared[/b]

Each sentence of article A is compared with the sentences of article B it is close to.

[b]What you see[/b]
  top line          share of A's sentences that strengthen / weaken some sentence of B, the
                    number of links and the time taken
  [green]\\[3][/] sentence      in A: it strengthens a sentence of B (green); in B: the sentence
                    that link 3 bears on, with the same number and colour
  [red]\\[4][/] sentence      the same for a sentence of A that weakens (disputes) one of B
  [u]underlined[/]        in A, the words that carry the relation
  [dim]grey[/]              a sentence with no link either way

[b]Keys[/b]
  Tab               switch between A and B
  ↑ ↓ PgUp PgDn     scroll
  Esc / q           back to the search
  F1 / ?            this help
  Ctrl+Q            quit
"""

TOPICS = {"search": SEARCH, "detail": DETAIL, "compare": COMPARE, "context": CONTEXT}


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "close")]

    def __init__(self, topic: str = "search") -> None:
        super().__init__()
        self.topic = topic if topic in TOPICS else "search"

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(TOPICS[self.topic], id="help-body")
