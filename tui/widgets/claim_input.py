"""The claim box: history on up/down, example claims as completions; → on an empty box inserts an
example (the placeholder promises it, and a new user has nothing typed to complete)."""

from __future__ import annotations

from textual.binding import Binding
from textual.suggester import SuggestFromList
from textual.widgets import Input

from perspect.api.examples import EXAMPLE_CLAIMS

EXAMPLES = list(EXAMPLE_CLAIMS)  # the page suggests the same (perspect.api.examples)


class ClaimInput(Input):
    BINDINGS = [
        Binding("up", "history(-1)", "older claim", show=False),
        Binding("down", "history(1)", "newer claim", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(
            placeholder="Type a contentious claim and press Enter (↑ history, → completes an example)",
            suggester=SuggestFromList(EXAMPLES, case_sensitive=False),
            **kwargs,
        )
        self.history: list[str] = []
        self._pos = 0
        self._example = 0

    def action_cursor_right(self, select: bool = False) -> None:
        if not self.value and not select:
            self.value = EXAMPLES[self._example % len(EXAMPLES)]
            self._example += 1
            self.cursor_position = len(self.value)
            return
        super().action_cursor_right(select)

    def remember(self, claim: str) -> None:
        if claim and (not self.history or self.history[-1] != claim):
            self.history.append(claim)
        self._pos = len(self.history)

    def action_history(self, step: int) -> None:
        if not self.history:
            return
        self._pos = max(0, min(len(self.history), self._pos + step))
        self.value = self.history[self._pos] if self._pos < len(self.history) else ""
        self.cursor_position = len(self.value)
