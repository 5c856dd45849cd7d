"""How the perspectives split between the sides, with the thin-side warning."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from perspect.core.result import Coverage


class CoverageBar(Static):
    def show(self, coverage: Coverage | None, width: int = 40) -> None:
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
        if coverage.warning:
            text.append(f"  ⚠ {coverage.warning}", style="yellow")
        self.update(text)
