"""Perspect: diverse, substantiated perspectives on a contentious claim.

    from perspect import Perspect
    p = Perspect.open("default")
    p.search("animals should have lawful rights")

Names are resolved lazily: `import perspect` (and every floor below the API, which imports the
package first) stays cheap, and torch is loaded only by what needs a model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["Hit", "HitList", "Item", "Perspect", "PerspectError"]

if TYPE_CHECKING:
    from perspect.api import Perspect
    from perspect.core.errors import PerspectError
    from perspect.core.types import Hit, HitList, Item

_LAZY = {
    "Perspect": "perspect.api",
    "PerspectError": "perspect.core.errors",
    "Hit": "perspect.core.types",
    "HitList": "perspect.core.types",
    "Item": "perspect.core.types",
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'perspect' has no attribute {name!r}")
