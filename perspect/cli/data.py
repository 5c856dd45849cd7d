"""`perspect data fetch`: PERSPECTRUM and ClaimDiff into data/."""

from __future__ import annotations

import argparse

from perspect.cli.common import (
    console,
)
from perspect.core.presentation.render import literal


def cmd_data_fetch(args: argparse.Namespace) -> int:
    from perspect.core.datasets.fetch import fetch_local, fetch_perspectrum

    if args.dataset == "perspectrum":
        files = fetch_perspectrum(args.dest, args.source)
    else:
        files = fetch_local(args.dataset, args.source, args.dest)
    for f in files:
        console().print(f"[green]✓[/] {literal(f)} ({f.stat().st_size:,} bytes)")
    return 0


def register(sub) -> None:
    """`perspect data`."""
    data = sub.add_parser("data", help="fetch datasets").add_subparsers(dest="sub", required=True)
    f = data.add_parser("fetch", help="download a dataset (or copy it with --from)")
    f.add_argument("dataset", choices=["perspectrum", "claimdiff"])
    f.add_argument("--dest", help="target folder (default: data/<dataset>)")
    f.add_argument("--from", dest="source", metavar="DIR", help="copy from a local folder instead")
    f.set_defaults(func=cmd_data_fetch)
