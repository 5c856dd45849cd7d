"""`perspect data fetch`: PERSPECTRUM, ClaimDiff, the debates and the news into data/."""

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
    elif args.dataset == "debates":
        return _debates(args)
    else:
        files = fetch_local(args.dataset, args.source, args.dest)
    for f in files:
        console().print(f"[green]✓[/] {literal(f)} ({f.stat().st_size:,} bytes)")
    return 0


def _debates(args: argparse.Namespace) -> int:
    """The debates' arguments with their claims and sides (perspect.core.datasets.debates), from
    ../shared/data (`--from`) and the PERSPECTRUM copy in data/perspectrum."""
    from pathlib import Path

    from perspect.core.datasets import debates

    if args.source is None:
        from perspect.core.errors import PerspectError

        raise PerspectError("the debates are built from a local folder",
                            hint="perspect data fetch debates --from ../shared/data")  # fmt: skip
    dest = Path(args.dest) if args.dest else debates.DEST
    path, summary = debates.build(Path(args.source), Path("data") / "perspectrum", dest)
    by = ", ".join(f"{k} {v:,}" for k, v in summary["by_source"].items())
    console().print(f"[green]✓[/] {literal(path)}: {summary['items']:,} arguments of "
                    f"{summary['debates']:,} debates ({literal(by)})")  # fmt: skip
    return 0


def register(sub) -> None:
    """`perspect data`."""
    data = sub.add_parser("data", help="fetch datasets").add_subparsers(dest="sub", required=True)
    f = data.add_parser("fetch", help="download a dataset (or copy it with --from)")
    f.add_argument("dataset", choices=["perspectrum", "claimdiff", "debates", "news"])
    f.add_argument("--dest", help="target folder (default: data/<dataset>)")
    f.add_argument("--from", dest="source", metavar="DIR", help="copy from a local folder instead")
    f.set_defaults(func=cmd_data_fetch)
