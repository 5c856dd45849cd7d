"""Progress reporting that the core can call without knowing who listens: the protocol, and the
reporter that tells no one. The CLI's bars are in perspect.core.presentation.progress_bars."""

from __future__ import annotations

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
