"""The four roles' inputs: the one place a claim and its texts become a model's (a, b) pair.

Training and inference both build their pairs through `pair_for`, so a model never sees at query
time a layout it was not trained on. Scoring is the pair model's own (`PairModel.predict` with the
roles' tasks, relevance and stance from one forward pass).
"""

from __future__ import annotations

SEP = " [SEP] "


def pair_for(task: str, claim: str, text: str, other: str | None = None) -> tuple[str, str]:
    """(a, b) input of `task`: relevance/stance (claim, perspective); equivalence (claim,
    perspective A [SEP] perspective B); evidence (claim [SEP] perspective, paragraph)."""
    if task in ("relevance", "stance"):
        return claim, text
    if task == "equivalence":
        return claim, f"{text}{SEP}{other}"
    if task == "evidence":
        return f"{claim}{SEP}{text}", other or ""
    raise ValueError(f"unknown task {task!r}")
