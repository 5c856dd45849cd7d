"""`perspect compare A B`: where article A strengthens or weakens B, point by point."""

from __future__ import annotations

import argparse

from perspect.cli.common import (
    console,
)
from perspect.core.presentation.render import json_text, literal


def cmd_compare(args: argparse.Namespace) -> int:
    from rich.table import Table

    from perspect import api
    from perspect.core.presentation.render import highlight

    res = api.compare(args.a, args.b, model_dir=args.model)
    if args.json:
        print(json_text(res.to_json()))
        return 0
    con = console()
    con.print(
        f"[bold]A[/] {literal(res.a.title)} ({len(res.a.sentences)} sentences)  →  "
        f"[bold]B[/] {literal(res.b.title)} ({len(res.b.sentences)} sentences)"
    )
    con.print(
        f"A strengthens B in {100 * res.share('strengthens'):.0f}% of its sentences, weakens it "
        f"in {100 * res.share('weakens'):.0f}% ({res.candidates} related pairs compared, "
        f"{res.took_ms / 1000:.1f} s)"
    )
    for verb, title, colour in (
        ("strengthens", "Points of agreement (A strengthens B)", "green"),
        ("weakens", "Points of dispute (A weakens B)", "red"),
    ):
        links = [x for x in res.links if x.relation == verb]
        if not links:
            con.print(f"[{colour}]{title}:[/] none")
            continue
        t = Table(title=title, title_style=f"bold {colour}", show_lines=True)
        t.add_column("p", justify="right")
        t.add_column("A (rationale highlighted)")
        t.add_column("B")
        for x in links:
            t.add_row(
                f"{x.probability:.2f}",
                highlight(res.a.sentences[x.a], x.rationale, "bold underline"),
                literal(res.b.sentences[x.b]),
            )
        con.print(t)
    return 0


def register(sub) -> None:
    """`perspect compare`."""
    c = sub.add_parser(
        "compare", help="compare two articles point by point (where A strengthens or weakens B)"
    )
    c.add_argument("a", help="article A: .txt / .md (a leading '# title'), or a JSON(L) record")
    c.add_argument("b", help="article B")
    c.add_argument("--model", default=None, help="comparator folder (default: models/comparator)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_compare)
