"""Progress reporting that the core can call without knowing who listens: the protocol, and the
reporter that tells no one. The CLI's bars are in perspect.core.presentation.progress_bars."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

Advance = Callable[[int], None]


class Reporter(Protocol):
    def stage(self, description: str, total: int | None = None) -> Iterator[Advance]:
        """Context manager: a named step of `total` units; call the yielded function to advance."""
        ...


class NullReporter:
    @contextmanager
    def stage(self, description: str, total: int | None = None) -> Iterator[Advance]:
        yield lambda n: None


class Timed:
    """Another reporter, with each stage's wall-clock start and length kept: what a write
    records in its manifest ("stages"), so a slow build says where its minutes went. Stages run
    on two threads at once in a build (the stance states beside the other pools' encoders), so
    their lengths add up to more than the build's."""

    def __init__(self, inner: Reporter):
        self.inner, self._clock, self._lock = inner, time.perf_counter, threading.Lock()
        self._t0 = self._clock()
        self._done: list[dict[str, float | str]] = []

    @contextmanager
    def stage(self, description: str, total: int | None = None) -> Iterator[Advance]:
        start = self._clock()
        try:
            with self.inner.stage(description, total) as adv:
                yield adv
        finally:
            row = {
                "stage": description,
                "start_s": round(start - self._t0, 2),
                "seconds": round(self._clock() - start, 2),
            }
            with self._lock:
                self._done.append(row)

    def take(self) -> list[dict[str, float | str]]:
        """The stages finished since the last take (or since this reporter was made)."""
        with self._lock:
            done, self._done = self._done, []
        return done
