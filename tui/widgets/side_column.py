"""A titled column of clusters for one side (Support, Oppose or Unclear), where a reader can
correct a perspective's side with one key."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, ListView

from perspect.core.result import Member, PerspectiveCluster
from perspect.core.types import Hit
from perspect.tui.messages import CorrectionAsked
from perspect.tui.widgets.cluster_item import ClusterItem
from perspect.tui.widgets.hit_item import HitItem
from perspect.tui.widgets.related_item import RelatedItem


class SideColumn(Vertical):
    BINDINGS = [
        Binding("s", "correct('support')", "on support"),
        Binding("o", "correct('oppose')", "on oppose"),
        Binding("x", "correct('off-topic')", "off-topic"),
        Binding("m", "same", "same as…"),
        Binding("u", "app.undo_correction", "undo"),
    ]

    def __init__(self, title: str, stance: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.title_text = title
        self.stance = stance

    def compose(self) -> ComposeResult:
        yield Label(self.title_text, classes="side-title")
        yield ListView(id=f"{self.stance}-list")

    async def show(self, clusters: tuple[PerspectiveCluster, ...], news_for=None) -> None:
        """`news_for`: a cluster's news items (SearchResult.news_for), shown under it."""
        lv = self.query_one(ListView)
        await lv.clear()
        await lv.extend(ClusterItem(c, news_for(c) if news_for else ()) for c in clusters)
        lv.index = 0 if clusters else None  # Enter opens the strongest one straight away
        self.query_one(Label).update(f"{self.title_text} ({len(clusters)})")

    def _selected(self) -> Member | None:
        """The perspective under the cursor: a cluster's representative, or a near miss (a
        reader who puts a near miss on a side keeps it in the answer)."""
        item = self.query_one(ListView).highlighted_child
        if isinstance(item, ClusterItem):
            return item.cluster.representative
        return item.member if isinstance(item, RelatedItem) else None

    def action_correct(self, side: str) -> None:
        rep = self._selected()
        if rep is not None:
            self.post_message(CorrectionAsked(rep.id, rep.text, side=side))

    def action_same(self) -> None:
        """Mark this perspective; `m` on another one then says the two make one point."""
        rep = self._selected()
        if rep is not None:
            self.post_message(CorrectionAsked(rep.id, rep.text, same=rep.id))

    async def show_related(self, members: tuple[Member, ...]) -> None:
        """Nothing passed the relevance cut: the best near misses, marked as low confidence."""
        lv = self.query_one(ListView)
        await lv.clear()
        await lv.extend(RelatedItem(m) for m in members)
        lv.index = None
        self.query_one(Label).update(f"Related, low confidence ({len(members)})")

    async def show_hits(self, hits: tuple[Hit, ...], title: str) -> None:
        """Retrieved perspectives without stance (no models): listed, under their own title."""
        lv = self.query_one(ListView)
        await lv.clear()
        await lv.extend(HitItem(h) for h in hits)
        lv.index = None
        self.query_one(Label).update(f"{title} ({len(hits)})")
