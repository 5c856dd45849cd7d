"""Plain renderings of a SearchResult: Markdown (export) and rich tables (CLI)."""

from __future__ import annotations

from perspect.core.result import PerspectiveCluster, SearchResult


def bar(value: float, width: int = 10) -> str:
    """A text strength bar: value in [0.5, 1] maps to empty..full (0.5 means undecided)."""
    filled = round(max(0.0, min(1.0, (value - 0.5) * 2)) * width)
    return "█" * filled + "░" * (width - filled)


def _cluster_md(i: int, c: PerspectiveCluster) -> list[str]:
    lines = [
        f"{i}. **{c.representative.text}** — {c.side_label}, strength {c.strength:.2f}, "
        f"relevance {c.representative.relevance:.2f}"
    ]
    for m in c.members[1:]:
        lines.append(f"   - also: {m.text}")
    for e in c.evidence:
        snippet = e.text if len(e.text) <= 300 else e.text[:297] + "..."
        lines.append(f"   - evidence `{e.id}` ({e.verdict}, {e.score:.2f}): {snippet}")
    return lines


def to_markdown(res: SearchResult) -> str:
    cov = res.coverage
    out = [
        f"# Perspectives on: {res.claim}",
        "",
        f"Support {cov.support} · Oppose {cov.oppose} · {res.took_ms:.0f} ms",
    ]
    if cov.warning:
        out += ["", f"> ⚠ {cov.warning}"]
    for title, stance in (("Support", "support"), ("Oppose", "oppose")):
        side = res.side(stance)
        out += ["", f"## {title} ({len(side)})", ""]
        for i, c in enumerate(side, start=1):
            out += _cluster_md(i, c)
        if not side:
            out.append("_none found_")
    if not res.clusters and res.hits:
        out += ["", "## Retrieved (no models)", ""]
        out += [f"{h.rank}. {h.text} (`{h.id}`, {h.score:.2f})" for h in res.hits]
    return "\n".join(out) + "\n"


def print_result(res: SearchResult) -> None:
    from rich.columns import Columns
    from rich.console import Console
    from rich.panel import Panel
    from rich.table import Table

    con = Console(highlight=False)
    cov = res.coverage
    con.print(
        f"[bold]{res.claim}[/]  —  [green]support {cov.support}[/] · "
        f"[red]oppose {cov.oppose}[/] · {res.took_ms:.0f} ms"
    )
    if cov.warning:
        con.print(f"[yellow]⚠ {cov.warning}[/]")
    if not res.clusters and res.hits:  # no models: the retrieval list is the whole answer
        for h in res.hits[:10]:
            con.print(f"{h.rank:>3}. {h.text} [dim]({h.id}, {h.score:.2f})[/]")
        return
    panels = []
    for title, stance, colour in (("Support", "support", "green"), ("Oppose", "oppose", "red")):
        t = Table(show_header=False, box=None, expand=True)
        t.add_column(ratio=1)
        for c in res.side(stance):
            extra = [] if c.side_label == stance else [c.side_label]
            if len(c.members) > 1:
                extra.append(f"{len(c.members)} phrasings")
            if c.evidence:
                extra.append(f"{c.supported_by}/{len(c.evidence)} evidence")
            t.add_row(
                f"[{colour}]{bar(c.strength)}[/] {c.representative.text}\n"
                f"[dim]{' · '.join(extra)}[/]"
            )
        panels.append(Panel(t, title=f"{title} ({len(res.side(stance))})", border_style=colour))
    con.print(Columns(panels, equal=True, expand=True))
