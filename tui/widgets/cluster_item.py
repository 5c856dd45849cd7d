"""One perspective cluster in a side column: representative, strength bar, phrasings, evidence,
how many sources its mined phrasings come from, its cited reason, the news that strengthens or
weakens it with each outlet's leaning, and a mark where a reader corrected it."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Label, ListItem

from perspect.core.presentation.render import NO_REASON, bar, news_source, plain
from perspect.core.result import NewsItem, PerspectiveCluster


class ClusterItem(ListItem):
    def __init__(self, cluster: PerspectiveCluster, news: tuple[NewsItem, ...] = ()) -> None:
        self.cluster = cluster
        self.news = news
        super().__init__(Label(self._text(), markup=False))

    def _text(self) -> Text:
        c = self.cluster
        colour = COLOURS.get(c.stance, "yellow")
        t = Text()
        t.append(bar(c.strength, 8), style=colour)
        t.append(f" {plain(c.representative.text)}\n")
        # in the Unclear column, the side it leans to ("unclear" is the column's title)
        label = f"leans {c.leans}" if c.stance == "unclear" and c.leans else c.side_label
        meta = [f"{label} {c.strength:.2f}"]
        if len(c.members) > 1:
            meta.append(f"{len(c.members)} phrasings")
        if c.evidence:
            meta.append(f"{c.supported_by}/{len(c.evidence)} evidence")
        if c.sources:
            n = len(c.sources)
            meta.append(f"{n} source{'s' if n > 1 else ''}")
        t.append("  " + " · ".join(meta), style="dim")
        if any(m.corrected for m in c.members):
            t.append("  ✎ corrected", style="bold cyan")
        if c.representative.source is not None:
            t.append(f"\n  ↳ {plain(c.representative.source.label)}", style="cyan")
        if c.debate is not None:
            t.append(f"\n  {plain(c.debate.label)}", style="dim cyan")
        if c.why is not None:
            t.append(f"\n  “{plain(c.why.sentence)}”", style="italic")
            if c.why.source is not None:
                t.append(f"  ({plain(c.why.cited_from)})", style="dim")
        elif c.evidence:
            t.append(f"\n  {NO_REASON}", style="dim italic")
        for n in self.news:  # the press on this point: relation, outlet (leaning), the words
            rel = n.cluster_relation or n.relation
            t.append(f"\n  ▪ {rel} ", style="bold green" if rel == "strengthens" else "bold red")
            t.append(f"{plain(news_source(n))}: ", style="dim")
            t.append(f"“{plain(n.text)}”", style="blue")
        return t


COLOURS = {"support": "green", "oppose": "red"}  # unclear: yellow
