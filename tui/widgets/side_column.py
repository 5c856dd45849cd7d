"""A titled column of clusters for one side (Support or Oppose)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, ListView

from perspect.core.result import PerspectiveCluster
from perspect.core.types import Hit
from perspect.tui.widgets.cluster_item import ClusterItem
from perspect.tui.widgets.hit_item import HitItem


class SideColumn(Vertical):
    def __init__(self, title: str, stance: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.title_text = title
        self.stance = stance

    def compose(self) -> ComposeResult:
        yield Label(self.title_text, classes="side-title")
        yield ListView(id=f"{self.stance}-list")

    async def show(self, clusters: tuple[PerspectiveCluster, ...]) -> None:
        lv = self.query_one(ListView)
        await lv.clear()
        await lv.extend(ClusterItem(c) for c in clusters)
        lv.index = 0 if clusters else None  # Enter opens the strongest one straight away
        self.query_one(Label).update(f"{self.title_text} ({len(clusters)})")

    async def show_hits(self, hits: tuple[Hit, ...], title: str) -> None:
        """Retrieved perspectives without stance (no models): listed, under their own title."""
        lv = self.query_one(ListView)
        await lv.clear()
        await lv.extend(HitItem(h) for h in hits)
        lv.index = None
        self.query_one(Label).update(f"{title} ({len(hits)})")
