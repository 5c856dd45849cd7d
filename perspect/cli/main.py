"""`perspect` command line: a thin layer over the Python API; errors print one line, exit 2.

One module per command group (data, index, news, search, train, eval, models, compare, tui,
correct, serve), each with
its handlers and a `register(sub)` that adds its parser; this module assembles them and owns the
process-wide error handling: `main` returns the exit code (tests call it in-process), `run` is
what the console script calls and ends the process with that code.
"""

from __future__ import annotations

import argparse
import atexit
import errno
import os
import sys
import traceback
import weakref
from typing import NoReturn

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
from perspect.core import background
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
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # a usage error (argparse said it on stderr) or --help: its code
        return e.code if isinstance(e.code, int) else 2
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


# How long the console script waits for background jobs (warm-ups, model loads) to stop at their
# next step before it ends the process anyway (os._exit leaves one still inside a native call).
GRACE_S = 1.0


def run(argv: list[str] | None = None) -> NoReturn:
    """The console script (`perspect`, `python -m perspect.cli`): `main`, then the process ends
    with its exit code and nothing else. Background jobs are cancelled and waited for (at most
    GRACE_S), the exit hooks run (logging, tantivy's scratch folders), the standard streams are
    flushed, and `os._exit` ends the process without the interpreter's teardown: there the native
    destructors of torch, faiss and ONNX Runtime ran under a thread still inside them, and a
    damaged index's clean error line was followed by SIGABRT (exit 134 instead of 2)."""
    try:
        rc = main(argv)
    except SystemExit as e:  # argparse: --help, --version, a usage error
        rc = _exit_code(e.code)
    except KeyboardInterrupt:  # before a command started (imports, parsing)
        print("interrupted; the index is unchanged", file=sys.stderr)
        rc = 130
    except BaseException:  # a bug: the traceback Python would print, and its exit code
        traceback.print_exc()
        rc = 1
    _end_process(rc)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _finalizers() -> None:
    """`weakref.finalize`'s exit hook, run here and retried: a background job still running past
    its grace (a model loading) can make a finalizer while the hook walks them, and the hook then
    raises "dictionary changed size during iteration", printed as a traceback under the error
    line (seen once in a fresh clone's `make test`)."""
    for _ in range(5):
        try:
            weakref.finalize._exitfunc()
            break
        except RuntimeError:
            weakref.finalize._shutdown = False  # the hook set it on its way out: run the rest
    atexit.unregister(weakref.finalize._exitfunc)


def _end_process(rc: int) -> NoReturn:
    try:
        background.stop_all(GRACE_S)
        _finalizers()
        atexit._run_exitfuncs()  # what the interpreter would run at exit, before its teardown
    except KeyboardInterrupt:  # a second Ctrl-C while waiting: leave now
        rc = rc or 130
    except Exception:
        traceback.print_exc()
        rc = rc or 1
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        rc = rc or 141
    except (OSError, ValueError) as e:
        if rc == 0:
            print(f"error: cannot write the output: {getattr(e, 'strerror', None) or e}",
                  file=sys.stderr)  # fmt: skip
            rc = 2
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    os._exit(rc & 0xFF)


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
    run()
