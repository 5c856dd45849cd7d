"""File checksums of an index version: checked before any native library reads a file.

Why: tantivy, faiss, SQLite and PLAID's C++ kernels trust their files. A garbled PLAID file
segfaulted or aborted a search, a garbled faiss file answered with other hits and no error. So the
manifest of each version records the sha256 of every file when the version is written (sha256:
430 MB/s here against 264 for blake2b, measured on 64 MB), and a reader checks the files of a
pool's store or backend the first time it opens them in a process: a mismatch is one line naming
the index, the file and the command that rewrites it. The manifest carries a checksum of its own
content, so an edit that leaves it valid JSON is caught too.

Versions written before checksums existed are checksummed at their first open (trusting the
files as they are then) and the manifest is rewritten with them, with a note on stderr; on
read-only media the note says they stay unchecked.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from perspect.core.errors import IndexDamaged
from perspect.core.index.layout import LEASE, atomic_write_text

ALGORITHM = "sha256"
MANIFEST = "manifest.json"
_SKIP_SUFFIXES = (".lock", "-journal", "-wal", "-shm")
_LOCK = threading.Lock()
_CHECKED: set[tuple[str, str]] = set()  # (version folder, prefix) verified in this process
_DIGESTS: dict[tuple[int, int, int, int], str] = {}  # (dev, inode, size, mtime) -> digest


def _recorded(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return rel != MANIFEST and name != LEASE and not name.endswith(_SKIP_SUFFIXES)


def digest(path: Path) -> str:
    """sha256 of a file; remembered per inode, size and mtime, so a file hard-linked into the
    next version (tantivy segments) is not read again by the process that already checked it."""
    st = path.stat()
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    known = _DIGESTS.get(key)
    if known is not None:
        return known
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def manifest_digest(manifest: dict[str, Any]) -> str:
    body = {k: v for k, v in manifest.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def file_digests(version: Path) -> dict[str, str]:
    out = {}
    for root, _dirs, files in os.walk(version):
        for f in files:
            p = Path(root) / f
            rel = p.relative_to(version).as_posix()
            if _recorded(rel):
                out[rel] = digest(p)
    return dict(sorted(out.items()))


def seal(version: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """Record every file's checksum and the manifest's own in `manifest` (written by the caller
    once it is complete: the checksum covers the manifest as it will be saved)."""
    manifest["files"] = file_digests(version)
    manifest["integrity"] = ALGORITHM
    return manifest


def stamp(manifest: dict[str, Any]) -> None:
    manifest["checksum"] = manifest_digest(manifest)


def _index_name(version: Path) -> str:
    return version.parent.parent.name


def _hint(version: Path, manifest: dict[str, Any], rel: str) -> str:
    name = _index_name(version)
    parts = rel.split("/")
    kinds = set((manifest.get("config") or {}).get("retrievers", []))
    if len(parts) >= 3 and parts[1] in kinds:
        return f"re-encode it: perspect index rebuild --name {name} --retriever {parts[1]}"
    if rel == "links.sqlite":
        kind = "bm25" if "bm25" in kinds else sorted(kinds)[0]
        return f"recompute it: perspect index rebuild --name {name} --retriever {kind}"
    return (
        f"rebuild the index from its sources: perspect index build --name {name} ... "
        "(perspect index rebuild cannot restore stored items)"
    )


def check_manifest(version: Path, manifest: dict[str, Any]) -> None:
    """A sealed manifest must match its own checksum (an edit that keeps it valid JSON)."""
    if "checksum" in manifest and manifest["checksum"] != manifest_digest(manifest):
        raise IndexDamaged(
            f"index {_index_name(version)!r} is damaged: {version.name}/{MANIFEST} does not "
            "match its checksum",
            hint=_hint(version, manifest, MANIFEST),
        )


def check(version: Path, manifest: dict[str, Any], prefix: str = "", skip: str = "") -> None:
    """Verify the recorded files under `prefix` (all of them for ""), once per process; the
    files of retriever `skip` in every pool (and the links, which BM25 and dense recompute) are
    left out: a rebuild is about to replace them."""
    key = (str(version), f"{prefix}|{skip}")
    if key in _CHECKED:
        return
    files = manifest.get("files")
    if files is None:
        adopt(version, manifest)
        return
    for rel, want in files.items():
        if prefix and not (rel == prefix or rel.startswith(prefix.rstrip("/") + "/")):
            continue
        if skip and rel.split("/")[1:2] == [skip] and rel.count("/") >= 2:
            continue
        if skip in ("bm25", "dense") and rel == "links.sqlite":  # recomputed from them
            continue
        p = version / rel
        try:
            got = digest(p)
        except OSError:
            got = None
        if got != want:
            what = "is missing" if got is None else "does not match its recorded checksum"
            raise IndexDamaged(
                f"index {_index_name(version)!r} is damaged: {version.name}/{rel} {what}",
                hint=_hint(version, manifest, rel),
            )
    with _LOCK:
        _CHECKED.add(key)


def adopt(version: Path, manifest: dict[str, Any]) -> None:
    """A version written before checksums existed: record them now, trusting the files."""
    with _LOCK:
        if (str(version), "adopted") in _CHECKED:
            return
        _CHECKED.add((str(version), "adopted"))
    name = _index_name(version)
    sealed = seal(version, dict(manifest))
    stamp(sealed)
    try:
        atomic_write_text(version / MANIFEST, json.dumps(sealed, indent=2, ensure_ascii=False))
    except OSError:
        print(
            f"note: index {name!r} was written by an older Perspect without file checksums, "
            "and its folder is read-only: its files stay unchecked",
            file=sys.stderr,
        )
        return
    manifest.update(sealed)
    print(
        f"note: index {name!r} was written by an older Perspect without file checksums; "
        "recorded them now (its files are trusted as they are)",
        file=sys.stderr,
    )
