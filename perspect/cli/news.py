"""`perspect news add`: articles from the web (pages and RSS/Atom feeds) into an index's news pool."""

from __future__ import annotations

import argparse

from perspect.cli.common import add_home, console
from perspect.core.presentation.render import json_text, literal

STYLE = {"added": "green", "duplicate": "yellow", "skipped": "yellow"}


def cmd_news_add(args: argparse.Namespace) -> int:
    from perspect import api
    from perspect.core.presentation.progress_bars import RichReporter

    with RichReporter(quiet=args.quiet or args.json) as rep:
        report = api.add_news(
            args.index,
            args.inputs,
            home=args.home,
            reporter=rep,
            timeout=args.timeout,
            budget=args.budget,
            leaning=args.leaning,
        )
    if args.json:
        print(json_text(report.to_json()))
        return 0
    c = console()
    for o in report.outcomes:
        c.print(f"  [{STYLE.get(o.status, 'red')}]{literal(o.line())}[/]")
    c.print(
        f"[green]✓[/] index [bold]{literal(report.index)}[/] ({report.version}): {report.summary()}; "
        f"{report.sentences:,} news sentences indexed"
    )
    return 0


def register(sub) -> None:
    """`perspect news`."""
    news = sub.add_parser("news", help="add news from the web").add_subparsers(
        dest="sub", required=True
    )
    a = news.add_parser(
        "add",
        help="fetch pages and RSS/Atom feeds, extract the articles (title, outlet, date, URL), "
        "de-duplicate them and add them to the news pool",
    )
    a.add_argument("inputs", nargs="+", metavar="URL", help="an article page or a feed URL")
    a.add_argument("--index", default="default")
    a.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds per URL, the whole fetch (default 10)",
    )
    a.add_argument(
        "--budget",
        type=float,
        default=300.0,
        help="seconds for fetching everything (default 300); what is left is reported, not fetched",
    )
    a.add_argument(
        "--leaning",
        metavar="LEANING",
        help="the outlets' leaning: left, centre or right (default: unrated); an answer counts "
        "which leanings carry each perspective",
    )
    a.add_argument("--json", action="store_true", help="print the report as JSON")
    a.add_argument("-q", "--quiet", action="store_true", help="no progress bars")
    add_home(a)
    a.set_defaults(func=cmd_news_add)
