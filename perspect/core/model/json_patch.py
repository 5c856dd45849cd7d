"""A large JSON file stored as its difference from its base twin: the keys that differ, those
the base has and it has not, and its key order (perspect.core.model.bundle: a MiniLM entry's
tokenizer.json differs from the base's only in its truncation and padding, 700 KB otherwise
stored once per entry)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PATCH_MIN_BYTES = 100_000  # a JSON file this large is stored as its difference from the base's


def diff(f: Path, twin: Path) -> dict[str, Any] | None:
    """{"set": keys whose values differ, "drop": keys the base has and `f` has not} of a large
    JSON object against its base twin, where that is much smaller than `f`; else None."""
    if f.suffix != ".json" or f.stat().st_size < PATCH_MIN_BYTES:
        return None
    try:
        mine, theirs = json.loads(f.read_text()), json.loads(twin.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return None
    patch = {
        "set": {k: v for k, v in mine.items() if k not in theirs or theirs[k] != v},
        "drop": [k for k in theirs if k not in mine],
        "order": list(mine),
    }
    return patch if len(json.dumps(patch)) < f.stat().st_size // 4 else None


def whole(stored: Path, twin: Path, dst: Path) -> None:
    """The JSON file `diff` stored as a difference, whole again (its keys in order)."""
    patch = json.loads(stored.read_text())
    got = {**json.loads(twin.read_text()), **patch["set"]}
    for k in patch["drop"]:
        got.pop(k, None)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps({k: got[k] for k in patch["order"]}, ensure_ascii=False))
