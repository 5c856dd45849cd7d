"""`perspect` command line: a thin layer over the Python API; errors print one line, exit 2.

One module per command group (data, index, search, train, eval, models, compare, tui), each with
its handlers and a `register(sub)` that adds its parser; this module assembles them and owns the
process-wide error handling.
"""

from __future__ import annotations

import argparse
import os
import sys

from perspect.cli import compare, data, eval, index, models, search, train, tui
from perspect.cli.common import console
from perspect.core.errors import PerspectError
from perspect.core.render import literal

GROUPS = (data, index, train, eval, models, compare, tui, search)  # the order `--help` lists


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="perspect", description=__doc__.split(":")[0])
    ap.add_argument("--version", action="version", version="perspect 0.1.0")
    sub = ap.add_subparsers(dest="command", required=True)
    for group in GROUPS:
        group.register(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    # The libraries' own tqdm bars (loading weights, loading a PLAID index) would interleave with
    # the CLI's rich output and the TUI's screen; Perspect reports its own progress. They read
    # these variables when imported, which the commands do lazily, after this line.
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except PerspectError as e:
        err = console(stderr=True)
        err.print(f"[bold red]error:[/] {literal(e.message)}", highlight=False, soft_wrap=True)
        if e.hint:
            err.print(f"  [dim]hint:[/] {literal(e.hint)}", soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        print("interrupted; the index is unchanged", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `perspect ... | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
