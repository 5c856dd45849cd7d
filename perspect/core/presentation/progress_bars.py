"""The CLI's progress bars: a `perspect.core.progress.Reporter` drawn by rich on stderr."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from perspect.core.progress import Advance


class RichReporter:
    """Rich progress bars on stderr, so `--json` output on stdout stays clean."""

    def __init__(self, quiet: bool = False):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            disable=quiet,
            transient=False,
        )

    def __enter__(self) -> RichReporter:
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    @contextmanager
    def stage(self, description: str, total: int | None = None) -> Iterator[Advance]:
        task = self._progress.add_task(description, total=total)
        try:
            yield lambda n: self._progress.advance(task, n)
        finally:
            done = self._progress.tasks[task].completed if total is None else total
            self._progress.update(task, total=max(done, 1), completed=max(done, 1))
