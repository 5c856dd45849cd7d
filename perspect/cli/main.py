"""`perspect` command line: a thin layer over the Python API; errors print one line, exit 2.

One module per command group (data, index, news, search, train, eval, models, compare, tui,
correct, serve), each with
its handlers and a `register(sub)` that adds its parser; this module assembles them and owns the
process-wide error handling.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys

from perspect.cli import (
    compare,
    correct,
    data,
    eval,
    index,
    models,
    news,
    search,
    serve,
    train,
    tui,
)
from perspect.cli.common import console
from perspect.core.errors import PerspectError
from perspect.core.presentation.render import literal

GROUPS = (
    data,
    index,
    news,
    train,
    eval,
    models,
    compare,
    tui,
    search,
    correct,
    serve,
)  # the order `--help` lists


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
    _pipe_errors_reach_main()
    if sys.stdout is None:  # `perspect ... >&-`: say so before doing any work
        print("error: standard output is closed; nothing could be printed", file=sys.stderr)
        return 2
    try:
        rc = args.func(args)
        sys.stdout.flush()  # a full disk or a gone reader is found here, not at exit
        return rc
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
        _drop_stdout()
        return 141
    except OSError as e:
        # writes to the index turn these into one EnvironmentFailure line already; reaching
        # here, it is the output that failed (`> /dev/full`, a file on a full disk)
        if e.errno not in _OUTPUT_ERRNOS:
            raise
        _drop_stdout()  # what is still buffered cannot be written either
        print(f"error: cannot write the output: {e.strerror or e}", file=sys.stderr)
        return 2


def _pipe_errors_reach_main() -> None:
    """rich turns a closed pipe into `SystemExit(1)`; its documented hook hands it back to
    `main`, which exits 141 as a shell expects of `perspect ... | head -1`."""
    from rich.console import Console

    def gone(self) -> None:
        raise BrokenPipeError(errno.EPIPE, "the reader closed the pipe")

    Console.on_broken_pipe = gone


_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EBADF, errno.EPIPE}


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not fail (and print) a second time."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
