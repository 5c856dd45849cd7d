"""Perspect: diverse, substantiated perspectives on a contentious claim.

    from perspect import Perspect
    p = Perspect.open("default")
    p.search("animals should have lawful rights")

Names are resolved lazily so that `perspect.errors` or `perspect.types` can be imported by the
indexer and retriever packages without pulling the whole engine (and without import cycles).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["Hit", "HitList", "Item", "Perspect", "PerspectError"]

if TYPE_CHECKING:
    from perspect.api import Perspect
    from perspect.errors import PerspectError
    from perspect.types import Hit, HitList, Item

_LAZY = {
    "Perspect": "perspect.api",
    "PerspectError": "perspect.errors",
    "Hit": "perspect.types",
    "HitList": "perspect.types",
    "Item": "perspect.types",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'perspect' has no attribute {name!r}")
