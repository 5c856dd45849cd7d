"""What the terminal UI asks of a search engine: the protocol between the screen and the models.

Why a protocol: the UI's behaviour (progress, cancelling, quitting, what each screen shows) can
then be tested with a stand-in that answers in microseconds or never, while `perspect tui`
injects the real engine (`perspect.api.PerspectService`). One end-to-end test drives the real one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from perspect.core.result import SearchResult, SourceContext

ProgressFn = Callable[[str, float], None]  # (stage, fraction done)


@dataclass(frozen=True)
class ServiceStatus:
    """The index the service searches, for the status line."""

    index: str
    pools: Mapping[str, int] = field(default_factory=dict)  # items per pool
    has_models: bool = True  # False: retrieval only (no stance, no clusters)
    models_loaded: bool = False  # the first search loads them (seconds)
    models_dir: str = ""


@runtime_checkable
class SearchService(Protocol):
    def status(self) -> ServiceStatus:
        """Open the index (cheap) and describe it; raises PerspectError with a hint when it
        cannot be opened."""
        ...

    def search(
        self,
        claim: str,
        progress: ProgressFn | None = None,
        cancel: threading.Event | None = None,
    ) -> SearchResult:
        """The full answer for `claim`. Called on a worker thread; should return soon after
        `cancel` is set (raising perspect.core.errors.Cancelled), and report stages through
        `progress`."""
        ...

    def compare(self, a: str | Path, b: str | Path) -> Any:
        """Article A against article B (a perspect.pipeline.compare.Comparison)."""
        ...

    def correct(
        self,
        claim: str,
        perspective: str | None = None,
        side: str | None = None,
        same: tuple[str, str] | None = None,
        undo: bool = False,
    ) -> bool:
        """A reader's correction for `claim` (perspect.core.index.corrections): `perspective` is on
        `side` (support, oppose, off-topic), or the perspectives `same` make one point; `undo`
        takes it back. True when something changed."""
        ...

    def context(self, sentence_id: str, pool: str = "documents") -> SourceContext:
        """A mined sentence in its article (perspect.core.result.SourceContext); raises
        PerspectError when the index has no such sentence."""
        ...
