"""How the perspectives split between the sides, with the thin-side warning, what a side rests
on (only mined sentences, one outlet), the claim's second reading where it has one, and which
leanings of the press carry the perspectives (with a warning where one alone carries a side)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from perspect.core.presentation.render import plain
from perspect.core.result import Coverage, SecondReading, Spread


class CoverageBar(Static):
    def show(
        self,
        coverage: Coverage | None,
        width: int = 40,
        reading: SecondReading | None = None,
        spread: Spread | None = None,
    ) -> None:
        if coverage is None:
            self.update("")
            return
        total = coverage.support + coverage.oppose
        text = Text()
        text.append(f" Support {coverage.support} ", style="bold green")
        if total:
            left = round(width * coverage.support / total)
            text.append("█" * left, style="green")
            text.append("█" * (width - left), style="red")
        else:
            text.append("░" * width, style="dim")
        text.append(f" {coverage.oppose} Oppose ", style="bold red")
        if coverage.unclear:
            text.append(f" · {coverage.unclear} unclear", style="bold yellow")
        if coverage.line:
            text.append(f"  ⚠ {plain(coverage.line)}", style="yellow")
        if reading is not None:
            text.append(f"  · {plain(reading.line)}", style="dim")
        if spread is not None and spread.line:  # which leanings of the press carry the points
            text.append(f"\n news: {spread.line}", style="blue")
            for w in spread.warnings:
                text.append(f"  ⚠ {w}", style="yellow")
        self.update(text)
