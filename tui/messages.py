"""Messages the search worker posts to the app (dataclasses, as in toolong). Each carries the
search it belongs to (its cancel event), so the app drops messages of a search it has left."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from textual.message import Message

from perspect.core.result import SearchResult, SourceContext


@dataclass
class SearchProgress(Message):
    stage: str
    fraction: float
    search: threading.Event | None = None


@dataclass
class SearchDone(Message):
    result: SearchResult
    search: threading.Event | None = None


@dataclass
class SearchFailed(Message):
    error: str
    hint: str | None = None
    search: threading.Event | None = None


@dataclass
class CorrectionAsked(Message):
    """A reader's key on a perspective: put it on `side` (support, oppose, off-topic), or, with
    `same`, merge it with the perspective marked before."""

    perspective: str
    text: str
    side: str | None = None
    same: str | None = None


@dataclass
class CorrectionDone(Message):
    said: str  # the confirmation line
    error: str | None = None


@dataclass
class CompareDone(Message):
    comparison: object  # perspect.pipeline.compare.Comparison (the TUI imports only the API)


@dataclass
class ContextDone(Message):
    context: SourceContext  # a mined sentence in its article, for the context screen
