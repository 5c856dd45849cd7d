"""The one factory from a bundle entry to its served model (reranker.served's life cycle)."""

from __future__ import annotations

import json
from pathlib import Path

from perspect.core.errors import ModelError
from perspect.core.model import bundle
from perspect.reranker.comparator import Comparator
from perspect.reranker.equivalence_ce import EquivalenceModel
from perspect.reranker.model import PairModel
from perspect.reranker.served import ServedModel

SERVED: tuple[type[ServedModel], ...] = (PairModel, EquivalenceModel, Comparator)


def served_class(entry: str | Path) -> type[ServedModel]:
    """The class that serves `entry`: by the role its bundle.json names, or (a full model folder
    written by training) by its manifest's format."""
    entry = Path(entry)
    if bundle.is_bundle(entry):
        role = bundle.BundleEntry.read(entry).role
        for cls in SERVED:
            if role == cls.ROLE:
                return cls
        raise ModelError(
            f"{entry} is a {role!r} model, not one served by a cross-encoder",
            hint=f"one of: {', '.join(c.ROLE for c in SERVED)}",
        )
    for cls in SERVED:
        try:
            fmt = json.loads((entry / cls.MANIFEST).read_text()).get("format")
        except (OSError, ValueError, AttributeError):
            continue
        if fmt == cls.FORMAT:
            return cls
    raise ModelError(f"{entry} holds no served model", hint="perspect models list")


def open_served(entry: str | Path, int8: bool = False) -> ServedModel:
    """The served model of a bundle entry (pair, equivalence or comparator): from its graph where
    made, else loaded and its graph made now."""
    return served_class(entry).open(entry, int8=int8)
