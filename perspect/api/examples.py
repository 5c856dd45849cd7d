"""Example claims a new reader is offered (the TUI's claim box completes them; the page lists
them): one list, so that both front doors suggest the same."""

from __future__ import annotations

EXAMPLE_CLAIMS = (
    "Animals should have lawful rights",
    "School uniforms should be compulsory",
    "Nuclear power is the answer to climate change",
    "Social media does more harm than good",
    "The voting age should be lowered to 16",
)
