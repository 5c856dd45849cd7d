"""The CLI's progress: a `perspect.core.progress.Reporter` on stderr, so `--json` output on stdout
stays clean. On a terminal, rich bars; elsewhere (a log, CI, `make demo | tee demo.log`) plain
lines, since rich draws nothing there until the end: each stage says when it starts, about every
10 % (count, rate, time left) and when it ends."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

from perspect.core.progress import Advance

LINE_EVERY_S = 60.0  # a stage of unknown length still says it is alive this often
QUIET_S = 1.0  # a stage over sooner says nothing (a failing command stays its one error line)


class RichReporter:
    """Rich progress bars on stderr where it is a terminal; `LineReporter`'s lines elsewhere."""

    def __init__(self, quiet: bool = False, stream: TextIO | None = None):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        console = Console(stderr=True) if stream is None else Console(file=stream)
        self._lines = None if quiet or console.is_terminal else LineReporter(console.file)
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=quiet or self._lines is not None,
            transient=False,
        )

    def __enter__(self) -> RichReporter:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    @contextmanager
    def stage(self, description: str, total: int | None = None) -> Iterator[Advance]:
        if self._lines is not None:
            with self._lines.stage(description, total) as adv:
                yield adv
            return
        task = self._progress.add_task(description, total=total)
        try:
            yield lambda n: self._progress.advance(task, n)
        finally:
            done = self._progress.tasks[task].completed if total is None else total
            self._progress.update(task, total=max(done, 1), completed=max(done, 1))


def _duration(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


class LineReporter:
    """Plain progress lines, one write each (stages on two threads at once interleave whole
    lines): "<stage>: started (N)", "<stage>: 40 % 4,444/11,112, 37/s, 2 min 10 s left",
    "<stage>: done, 11,112 in 5 min 01 s (37/s)"."""

    def __init__(self, stream: TextIO | None = None, clock=time.monotonic):
        self.stream, self.clock, self._lock = stream or sys.stderr, clock, threading.Lock()
        # $PERSPECT_PROGRESS_QUIET_S: 0 says every stage (a test of a build quicker than it)
        self.quiet = float(os.environ.get("PERSPECT_PROGRESS_QUIET_S", QUIET_S))

    def _say(self, text: str) -> None:
        with self._lock:
            self.stream.write(f"[{time.strftime('%H:%M:%S')}] {text}\n")
            self.stream.flush()

    @contextmanager
    def stage(self, description: str, total: int | None = None) -> Iterator[Advance]:
        """A stage that ends (or fails) within QUIET_S says nothing: a bad input stays the
        one-line error it is; a longer one says it started as soon as it has run that long (or
        at its first tenth) and says it ended."""
        t0 = self.clock()
        state = {"done": 0, "tenth": 0, "said": t0, "started": False}
        lock = threading.Lock()

        def started() -> None:
            with lock:
                if not state["started"]:
                    state["started"] = True
                    self._say(f"{description}: started" + (f" ({total:,})" if total else ""))

        timer = threading.Timer(self.quiet, started)
        timer.daemon = True
        timer.start()

        def advance(n: int) -> None:
            state["done"] += n
            now, done = self.clock(), state["done"]
            rate = done / max(now - t0, 1e-9)
            if total:
                tenth = min(10, int(10 * done / total))
                if tenth > state["tenth"] and done < total:
                    state["tenth"], state["said"] = tenth, now
                    if now - t0 < self.quiet and not state["started"]:
                        return  # a stage this quick says only that it ended, if it runs long
                    started()
                    left = (total - done) / rate if rate > 0 else 0.0
                    self._say(f"{description}: {10 * tenth} % {done:,}/{total:,}, "
                              f"{rate:,.1f}/s, {_duration(left)} left")  # fmt: skip
            elif now - state["said"] >= LINE_EVERY_S:
                state["said"] = now
                started()
                self._say(f"{description}: {done:,} so far, {rate:,.1f}/s")

        try:
            yield advance
        except BaseException:
            timer.cancel()
            if state["started"]:
                self._say(f"{description}: stopped after {_duration(self.clock() - t0)}")
            raise
        timer.cancel()
        el = self.clock() - t0
        if not state["started"] and el < self.quiet:
            return  # over before anyone would wait for it
        started()
        done = state["done"] or (total or 0)
        if not done:  # a stage that counts nothing: its length alone
            self._say(f"{description}: done in {_duration(el)}")
            return
        rate = f" ({done / el:,.1f}/s)" if el > 0 else ""
        self._say(f"{description}: done, {done:,} in {_duration(el)}{rate}")
