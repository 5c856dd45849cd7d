"""Copy-on-write index versions: the reason a crash never breaks an index.

Every write (build, add, delete) happens in a fresh `versions/<v>/` folder. Only when it is complete
and synced is the one-line `CURRENT` file replaced (os.replace, atomic on POSIX). A writer killed at
any point leaves CURRENT naming the previous, untouched version; the orphan folder is removed by the
next writer. Updates clone the live version first: a file the write may change in place (the pools it writes,
and their links) is copied, every other file is hard-linked (no bytes copied, no new disk), and so
are the files a backend declares write-once (tantivy segments). A write replaces a shared file only
by a new one (a rename or an unlink first: SQLite, tantivy and the manifest writer all do), so the
previous version never sees a change. Measured on the demo index: an `index add` of news articles
wrote 173 MB of copies before, its own files now (7.2 MB new, 177.9 MB shared: bench/RESULTS.md,
"Other figures").
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from perspect.core.errors import IndexBusy, IndexNotFound

CURRENT = "CURRENT"
LOCK = "LOCK"
VERSIONS = "versions"
LEASE = "LEASE"  # in each version folder: readers hold a shared flock on it while they read


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    for root, _dirs, files in os.walk(path):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(root))


def atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


class IndexDir:
    """One named index under a home folder."""

    def __init__(self, home: Path, name: str):
        self.home = Path(home)
        self.name = name
        self.root = self.home / name

    # -- reading -------------------------------------------------------------------------------
    def exists(self) -> bool:
        return self.current_name() is not None

    def current_name(self) -> str | None:
        """The live version's name, or None. A version is removed only after CURRENT names a
        newer one, so a name read just before a publish whose folder is gone a moment later is
        read again: the second reading names the new version (a name missing twice is a broken
        index)."""
        last = None
        for _ in range(3):
            try:
                v = (self.root / CURRENT).read_text(encoding="utf-8").strip()
            except FileNotFoundError:
                return None
            if v and (self.root / VERSIONS / v).is_dir():
                return v
            if not v or v == last:
                return None
            last = v
        return None

    def current(self) -> Path:
        v = self.current_name()
        if v is None:
            known = list_indexes(self.home)
            hint = f"build it: perspect index build --name {self.name} --perspectives FILE"
            if self.root.exists():
                msg = (
                    f"index {self.name!r} has no completed build (an earlier build was interrupted)"
                )
            else:
                msg = f"no index named {self.name!r} in {self.home}"
                if known:
                    hint += f" (existing: {', '.join(known)})"
            raise IndexNotFound(msg, hint=hint)
        return self.root / VERSIONS / v

    # -- writing -------------------------------------------------------------------------------
    @contextmanager
    def writer_lock(self) -> Iterator[None]:
        """Exclusive writer lock; the OS drops it if the writer dies, so it never goes stale."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise IndexBusy(
                    f"index {self.name!r} is being written by another process",
                    hint="wait for it to finish, then try again",
                ) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            self.remove_orphans()
            yield
        finally:
            os.close(fd)

    def remove_orphans(self) -> None:
        """Delete version folders CURRENT does not name (left by a crashed writer, or replaced by
        a newer one) that no reader holds a lease on; a held one is swept by a later writer."""
        live = self.current_name()
        vdir = self.root / VERSIONS
        if vdir.is_dir():
            for d in vdir.iterdir():
                if d.name.startswith(".trash-"):
                    shutil.rmtree(d, ignore_errors=True)  # a writer died while removing it
                elif d.name != live:
                    _remove_unleased(d)

    def lease(self) -> Lease:
        """Pin the live version for reading: until the lease is released, no writer deletes it
        (Lucene's SearcherManager keeps an IndexReader's files alive the same way)."""
        for _ in range(100):
            version = self.current()
            lease = Lease.take(version)
            if lease is not None:
                return lease
        raise IndexBusy(
            f"index {self.name!r} changed 100 times while it was being opened",
            hint="try again when the writes pause",
        )

    def new_version(
        self,
        clone_from: Path | None = None,
        immutable: Callable[[Path], bool] | None = None,
        touched: Sequence[str] | None = None,
    ) -> Path:
        """A new version folder: empty, or a clone of `clone_from` in which the files under the
        relative paths `touched` are copied (the write may change them in place) and every other
        file is hard-linked (None: everything copied but what `immutable` accepts)."""
        live = self.current_name()
        n = int(live.split("-")[0][1:]) + 1 if live else 1
        name = f"v{n:06d}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
        path = self.root / VERSIONS / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if clone_from is None:
            path.mkdir()
            return path
        try:
            share = immutable or (lambda p: False)
            if touched is not None:
                share = _outside(clone_from, touched, share)
            clone_tree(clone_from, path, share)
        except BaseException:  # a full disk, say: leave no half copy behind
            shutil.rmtree(path, ignore_errors=True)
            raise
        return path

    def publish(self, version: Path) -> None:
        """Make `version` the live one (atomic), then drop older versions. If it cannot be made
        live (a full disk), it is removed and the live version stays as it was."""
        try:
            fsync_tree(version)
            atomic_write_text(self.root / CURRENT, version.name + "\n")
        except BaseException:
            if self.current_name() != version.name:
                shutil.rmtree(version, ignore_errors=True)
            raise
        self.remove_orphans()

    def remove(self) -> None:
        with self.writer_lock():
            shutil.rmtree(self.root)


class Lease:
    """A reader's shared flock on `<version>/LEASE`. The OS drops it when the reader exits, so a
    crashed reader never pins a version for ever. On read-only media no lease is needed (nothing
    can delete the version) and none is taken."""

    def __init__(self, version: Path, fd: int | None):
        self.version, self._fd = version, fd

    @classmethod
    def take(cls, version: Path) -> Lease | None:
        """The lease, or None when a writer removed the version before it was taken (retry)."""
        path = version / LEASE
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        except FileNotFoundError:
            return None  # the folder went away between CURRENT and here
        except OSError:
            if version.is_dir() and not os.access(version, os.W_OK):
                return cls(version, None)  # read-only media: nothing can delete it
            return None
        fcntl.flock(fd, fcntl.LOCK_SH)
        try:
            alive = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            alive = False  # a writer removed the version while we waited for the lock
        if not alive:
            os.close(fd)
            return None
        return cls(version, fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.release()


def _remove_unleased(version: Path) -> None:
    """Remove a version folder unless a reader holds its lease (an exclusive flock would fail)."""
    try:
        fd = os.open(version / LEASE, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        shutil.rmtree(version, ignore_errors=True)  # no lease file can exist: a broken folder
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # a reader is on it
        # out of the way first, in one step: a reader that opens <version>/LEASE while rmtree is
        # half done would re-create the file (O_CREAT) and lease a version without its manifest
        trash = version.with_name(f".trash-{version.name}-{os.getpid()}")
        try:
            os.rename(version, trash)
        except OSError:
            trash = version
        shutil.rmtree(trash, ignore_errors=True)
    finally:
        os.close(fd)


def _outside(root: Path, touched: Sequence[str], immutable: Callable[[Path], bool]):
    """A predicate: a file of `root` not under any of `touched` (relative paths), or immutable."""
    parts = [Path(t).parts for t in touched]

    def share(p: Path) -> bool:
        rel = Path(p).relative_to(root).parts
        return immutable(Path(p)) or not any(rel[: len(t)] == t for t in parts)

    return share


def clone_tree(src: Path, dst: Path, immutable: Callable[[Path], bool]) -> None:
    """Copy a version folder; files `immutable` accepts are hard-linked (no bytes copied; a
    file system that cannot link them gets copies)."""

    def copy(s: str, d: str) -> None:
        if immutable(Path(s)):
            try:
                os.link(s, d)
                return
            except OSError:
                pass
        shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=copy, ignore=shutil.ignore_patterns("*.lock", LEASE))


def list_indexes(home: Path) -> list[str]:
    if not Path(home).is_dir():
        return []
    return sorted(d.name for d in Path(home).iterdir() if (d / CURRENT).is_file())
