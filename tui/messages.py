"""Messages the search worker posts to the app (dataclasses, as in toolong). Each carries the
search it belongs to (its cancel event), so the app drops messages of a search it has left."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from textual.message import Message

from perspect.core.result import SearchResult


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
class CompareDone(Message):
    comparison: object  # perspect.pipeline.compare.Comparison (the TUI imports only the API)
