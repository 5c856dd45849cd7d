"""`manifest.json`: what an index holds and how it was made (ColBERT's `base_config.save` idea).

Pool counts, every source file with size and sha256, the index config, library versions and
timestamps. Written atomically inside the version folder, so it always describes exactly that version.
"""

from __future__ import annotations

import hashlib
import json
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from perspect.core.index.layout import atomic_write_text

FORMAT = "perspect.index/1"
FILENAME = "manifest.json"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def file_fingerprint(path: Path) -> dict[str, Any]:
    """Size and sha256 of a file, or of every file in a folder (news folders)."""
    h = hashlib.sha256()
    size = 0
    files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode())
        with open(f, "rb") as fh:
            for block in iter(lambda fh=fh: fh.read(1 << 20), b""):
                h.update(block)
                size += len(block)
    return {"path": str(path.resolve()), "size": size, "sha256": h.hexdigest()}


def library_versions(extra: dict[str, str]) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("perspect",):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "unknown"
    return {**out, **extra}


def new_manifest(name: str, config: dict[str, Any]) -> dict[str, Any]:
    t = now()
    return {
        "format": FORMAT,
        "name": name,
        "version": None,
        "created_at": t,
        "updated_at": t,
        "config": config,
        "pools": {},
        "sources": [],
        "operations": [],
        "libraries": {},
    }


def load(version_dir: Path) -> dict[str, Any]:
    """The manifest of a version, checked against its own checksum
    (perspect.core.index.integrity)."""
    from perspect.core.errors import IndexDamaged
    from perspect.core.index import integrity

    p = version_dir / FILENAME
    name = version_dir.parent.parent.name
    try:
        m = json.loads(p.read_text(encoding="utf-8"))
        if not isinstance(m, dict):
            raise ValueError("not a JSON object")
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise IndexDamaged(
            f"index {name!r} is damaged: cannot read {version_dir.name}/{FILENAME} "
            f"({type(e).__name__})",
            hint=f"rebuild it from its sources: perspect index build --name {name} ...",
        ) from None
    if m.get("format") != FORMAT:
        raise IndexDamaged(
            f"{p} has format {m.get('format')!r}; this Perspect reads {FORMAT!r}",
            hint="rebuild the index with this version of Perspect",
        )
    integrity.check_manifest(version_dir, m)
    return m


def save(version_dir: Path, manifest: dict[str, Any]) -> None:
    manifest["version"] = version_dir.name
    manifest["updated_at"] = now()
    manifest.pop("checksum", None)  # sealed again at publish (seal)
    atomic_write_text(version_dir / FILENAME, json.dumps(manifest, indent=2, ensure_ascii=False))


def seal(version_dir: Path) -> dict[str, Any]:
    """Record the checksum of every file of a complete version (and of the manifest itself):
    the last write before it is published."""
    from perspect.core.index import integrity

    m = load(version_dir)
    integrity.seal(version_dir, m)
    integrity.stamp(m)
    atomic_write_text(version_dir / FILENAME, json.dumps(m, indent=2, ensure_ascii=False))
    return m
