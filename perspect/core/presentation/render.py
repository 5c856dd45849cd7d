"""Plain renderings of a SearchResult: Markdown (export) and rich tables (CLI)."""

from __future__ import annotations

import re

from perspect.core.result import Member, PerspectiveCluster, SearchResult

# C0 and C1 controls (but newline and tab), DEL, and the bidirectional overrides that can make a
# text read differently from what it is ("Trojan source")
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# what a cluster with evidence but no paragraph judged "supports" says instead of a reason
# (pipeline.why cites only from those)
NO_REASON = "no backing sentence found"


def plain(text: object) -> str:
    """`text` with every control character made visible: an indexed document or a file name must
    not be able to drive the user's terminal (colours, window title, cursor) with escape codes."""

    def show(m: re.Match) -> str:
        c = ord(m.group())
        if c < 0x20:
            return chr(0x2400 + c)  # ␛ for ESC, ␇ for BEL, ...
        return "␡" if c == 0x7F else f"\\u{c:04x}"

    return _CONTROLS.sub(show, str(text))


# JSON escapes C0 controls itself; DEL, the C1 controls (0x9b is a one-byte CSI on some
# terminals) and the bidi overrides pass through `ensure_ascii=False` raw.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_text(obj: object) -> str:
    """Indented JSON, non-ASCII text kept readable, every control character escaped (`\\u009b`)."""
    import json

    out = json.dumps(obj, ensure_ascii=False, indent=2)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


def literal(text: object) -> str:
    """`text` safe to interpolate into rich markup: controls made visible, markup escaped, so
    "animals [/] rights" or "[bold red]" in a claim, a document or a path prints as written."""
    from rich.markup import escape

    return escape(plain(text))


def highlight(text: str, spans, style: str = "bold underline") -> str:
    """Rich markup of `text` with the character `spans` styled (rationale words), safely escaped."""
    out, at = [], 0
    for s, e in sorted(spans):
        if s < at:
            continue
        out.append(literal(text[at:s]))
        out.append(f"[{style}]{literal(text[s:e])}[/]")
        at = e
    out.append(literal(text[at:]))
    return "".join(out)


def news_source(n) -> str:
    """Where a news sentence comes from: outlet (leaning) · date · title, each when known."""
    outlet = n.metadata.get("outlet")
    parts = [f"{outlet} ({n.leaning})" if outlet else n.leaning]
    parts += [str(n.metadata[k]) for k in ("date", "title") if n.metadata.get(k)]
    return " · ".join(parts)


def news_line(n, of_cluster: bool = False) -> str:
    """One news sentence for a terminal: relation (to the claim, or to its cluster's perspective
    with `of_cluster`), outlet (leaning) · date · title, text with its rationale marked."""
    rel, p = (
        (n.cluster_relation, n.cluster_probability) if of_cluster else (n.relation, n.probability)
    )
    colour = "green" if rel == "strengthens" else "red"
    head = f"[{colour}]{rel} ({p:.2f})[/] [dim]{literal(news_source(n))}[/]"
    more = f" [dim]({also_in(n)})[/]" if n.also else ""
    return f"{head}  {highlight(n.text, n.rationale)}{more}"


def spread_lines(res) -> list[str]:
    """The press line ("news: carried by left 4 · centre 1 · right 0") and its warnings, plain."""
    sp = res.spread
    if sp.line is None:
        return []
    return [f"news: {sp.line}", *(f"⚠ {w}" for w in sp.warnings)]


def also_in(n) -> str:
    """Where else a news sentence's words were found (NewsItem.also), for a reader."""
    k = len(n.also)
    return f"also in {k} other article{'s' if k > 1 else ''}"


def bar(value: float, width: int = 10) -> str:
    """A text strength bar: value in [0.5, 1] maps to empty..full (0.5 means undecided)."""
    filled = round(max(0.0, min(1.0, (value - 0.5) * 2)) * width)
    return "█" * filled + "░" * (width - filled)


def source_of(m: Member) -> str:
    """Where a mined member comes from, for a reader: outlet · date · title (and its URL)."""
    if m.source is None:
        return ""
    return m.source.label + (f" <{m.source.url}>" if m.source.url else "")


def sources_line(c: PerspectiveCluster) -> str | None:
    """How many sources carry a cluster's mined phrasings (None: none mined)."""
    n = len(c.sources)
    if not n:
        return None
    mined = sum(1 for m in c.members if m.mined)
    return f"{mined} mined sentence{'s' if mined > 1 else ''} from {n} source{'s' if n > 1 else ''}"


def _cluster_md(i: int, c: PerspectiveCluster) -> list[str]:
    rep = c.representative
    lines = [
        f"{i}. **{plain(rep.text)}** — {c.side_label}, strength {c.strength:.2f}, "
        f"relevance {rep.relevance:.2f}"
        + (f" — mined from {plain(source_of(rep))}" if rep.mined else "")
    ]
    if (said := sources_line(c)) is not None:
        lines.append(f"   - {said}")
    if c.why:
        lines.append(f"   - why: “{plain(c.why.sentence)}” ({plain(c.why.cited_from)})")
    elif c.evidence:
        lines.append(f"   - why: {NO_REASON}")
    for m in c.members[1:]:
        lines.append(
            f"   - also: {plain(m.text)}"
            + (" (corrected)" if m.corrected else "")
            + (f" — {plain(source_of(m))}" if m.mined else "")
        )
    for e in c.evidence:
        snippet = plain(e.text if len(e.text) <= 300 else e.text[:297] + "...")
        lines.append(f"   - evidence `{e.id}` ({e.verdict}, {e.score:.2f}): {snippet}")
    return lines


SIDES = (
    ("Support", "support"),
    ("Oppose", "oppose"),
    ("Unclear: the model cannot tell", "unclear"),
)


def to_markdown(res: SearchResult) -> str:
    cov = res.coverage
    out = [
        f"# Perspectives on: {res.claim}",
        "",
        f"Support {cov.support} · Oppose {cov.oppose}"
        + (f" · Unclear {cov.unclear}" if cov.unclear else "")
        + f" · {res.took_ms:.0f} ms",
    ]
    if cov.line:
        out += ["", f"> ⚠ {plain(cov.line)}"]
    out += [f"> {plain(line)}" for line in spread_lines(res)]
    for title, stance in SIDES:
        side = res.side(stance)
        if stance == "unclear" and not side:
            continue
        out += ["", f"## {title} ({len(side)})", ""]
        for i, c in enumerate(side, start=1):
            out += _cluster_md(i, c)
        if not side:
            out.append("_none found_")
    if res.news:
        out += ["", "## News", ""]
        shown = {c.representative.id: c.representative.text for c in res.clusters}
        for n in res.news:
            words = "; ".join(plain(w) for w in n.rationale_words)
            on = (
                f" — {n.cluster_relation} “{plain(shown[n.cluster])}”" if n.cluster in shown else ""
            )
            out.append(
                f"- {n.relation} the claim ({n.probability:.2f}) [{plain(news_source(n))}]: "
                f"{plain(n.text)}{on}" + (f" — rationale: _{words}_" if words else "")
            )
    if res.related:
        out += ["", "## Related, low confidence (none passed the relevance cut)", ""]
        out += [f"- {plain(m.text)} (`{m.id}`, relevance {m.relevance:.2f})" for m in res.related]
    elif not res.clusters and res.hits:
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
        f"[bold]{literal(res.claim)}[/]  —  [green]support {cov.support}[/] · "
        f"[red]oppose {cov.oppose}[/]"
        + (f" · [yellow]unclear {cov.unclear}[/]" if cov.unclear else "")
        + f" · {res.took_ms:.0f} ms"
    )
    if cov.line:
        con.print(f"[yellow]⚠ {literal(cov.line)}[/]")
    for line in spread_lines(res):
        con.print(
            f"[yellow]{literal(line)}[/]" if line.startswith("⚠") else f"[blue]{literal(line)}[/]"
        )
    if res.second_reading is not None:
        con.print(f"[dim]{literal(res.second_reading.line)}[/]")
    if res.related:  # nothing passed the relevance cut: the near misses, marked as such
        con.print("[yellow]Related, low confidence[/] [dim](none passed the relevance cut)[/]")
        for m in res.related:
            con.print(
                f"  [yellow]~[/] {literal(m.text)} [dim]({literal(m.id)}, relevance "
                f"{m.relevance:.2f})[/]"
            )
        _print_news(con, res)
        return
    if not res.clusters and res.hits:  # no models: the retrieval list is the whole answer
        for h in res.hits[:10]:
            con.print(f"{h.rank:>3}. {literal(h.text)} [dim]({literal(h.id)}, {h.score:.2f})[/]")
        _print_news(con, res)
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
            if any(m.corrected for m in c.members):
                extra.append("corrected by a reader")
            if (said := sources_line(c)) is not None:
                extra.append(said)
            why = (
                f"\n[italic]“{literal(c.why.sentence)}”[/] [dim]({literal(c.why.cited_from)})[/]"
                if c.why
                else (f"\n[dim]{NO_REASON}[/]" if c.evidence else "")
            )
            mined = "".join(f"\n{line}" for line in _mined_lines(c))
            mined += "".join(f"\n[blue]▪[/] {news_line(n, True)}" for n in res.news_for(c))
            debate = f"\n[dim cyan]{literal(c.debate.label)}[/]" if c.debate else ""
            t.add_row(
                f"[{colour}]{bar(c.strength)}[/] {literal(c.representative.text)}\n"
                f"[dim]{' · '.join(extra)}[/]{debate}{why}{mined}"
            )
        panels.append(Panel(t, title=f"{title} ({len(res.side(stance))})", border_style=colour))
    con.print(Columns(panels, equal=True, expand=True))
    unclear = res.side("unclear")
    if unclear:  # its own line each: the model cannot tell their side
        con.print(f"[yellow]Unclear ({len(unclear)}): the model cannot tell their side[/]")
        for c in unclear:
            lean = (
                f"leans {c.leans}" if c.leans else "no lean"
            )  # under "Unclear": not "unclear" again
            con.print(f"  [yellow]?[/] {literal(c.representative.text)} [dim]({lean})[/]")
            if c.debate:
                con.print(f"    [dim cyan]{literal(c.debate.label)}[/]")
            if (said := sources_line(c)) is not None:
                con.print(f"    [dim]{said}[/]")
            for line in _mined_lines(c):  # where each mined phrasing comes from, as on a side
                con.print(f"    {line}")
    _print_news(con, res)


def _mined_lines(c: PerspectiveCluster) -> list[str]:
    """Each mined phrasing of `c` with the article it comes from (the representative's text is
    the cluster's own line)."""
    return [
        f"[cyan]↳[/] {'' if m is c.representative else literal(m.text) + ' '}"
        f"[dim cyan]({literal(source_of(m))})[/]"
        for m in c.members
        if m.mined
    ]


def _print_news(con, res: SearchResult) -> None:
    from rich.panel import Panel
    from rich.table import Table

    shown = {c.representative.id for c in res.clusters if c.stance != "unclear"}
    rest = [n for n in res.news if n.cluster not in shown]  # the others are under their cluster
    if not rest:
        return
    t = Table(show_header=False, box=None, expand=True)
    t.add_column(ratio=1)
    for n in rest:
        t.add_row(news_line(n))
    con.print(Panel(t, title=f"News on the claim ({len(rest)})", border_style="blue"))
