"""How the perspectives split between the sides, with the thin-side warning, what a side rests
on (only mined sentences, one outlet) and the claim's second reading where it has one."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from perspect.core.presentation.render import plain
from perspect.core.result import Coverage, SecondReading


class CoverageBar(Static):
    def show(
        self, coverage: Coverage | None, width: int = 40, reading: SecondReading | None = None
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
        self.update(text)
