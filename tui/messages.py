"""Messages the search worker posts to the app (dataclasses, as in toolong)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from perspect.core.result import SearchResult


@dataclass
class SearchProgress(Message):
    stage: str
    fraction: float


@dataclass
class SearchDone(Message):
    result: SearchResult


@dataclass
class SearchFailed(Message):
    error: str
    hint: str | None = None
