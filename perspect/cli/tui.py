"""`perspect tui`: opens the terminal UI (textual is an optional dependency)."""

from __future__ import annotations

import argparse
from pathlib import Path

from perspect.cli.common import (
    add_home,
)
from perspect.core.errors import PerspectError


def cmd_tui(args: argparse.Namespace) -> int:
    from perspect.core.index.config import resolve_home

    resolve_home(args.home)  # a home that is a file: one line and exit 2, before the screen opens
    try:
        from perspect.tui.app import run
    except ImportError as e:
        raise PerspectError(
            f"the terminal UI needs textual ({e})", hint="pip install 'perspect[tui]'"
        ) from None
    compare = tuple(args.compare) if args.compare else None
    if compare:
        for f in compare:
            if not Path(f).is_file():
                what = "is a directory, not an article" if Path(f).is_dir() else "no such file"
                raise PerspectError(f"{f}: {what}", hint="perspect tui --compare A.md B.md")
    from perspect.api import PerspectService

    service = PerspectService(args.index, home=args.home, model=args.model, fast=args.fast)
    run(service, compare=compare, end_process=True)
    return 0


def register(sub) -> None:
    """`perspect tui`."""
    u = sub.add_parser("tui", help="the interactive terminal UI")
    u.add_argument("--index", default="default")
    u.add_argument("--model", default=None, help="pairwise model folder (default: models/pair)")
    u.add_argument("--fast", action="store_true", help="as perspect search --fast")
    u.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        help="open two articles side by side (A's sentences that strengthen or weaken B)",
    )
    add_home(u)
    u.set_defaults(func=cmd_tui)
