"""Lower-layer states kept with an index the first time a search needs them
(`lower_states.sqlite`, in the index's folder beside its versions): the format.

Why beside the versions and keyed by text: a text's frozen lower layers depend on the text and
the base that made them (the states key), not on the claim, its id or the version it was read
from. Kept by (key, text), a state made for one search serves every later one, survives adds,
deletes and rebuilds (a new version copies nothing), and never goes stale: a text edited under
the same id is another key. The build no longer pays for every perspective's states (a third of
a `make demo` build's CPU time) for the few hundred a reader's searches touch; a long-lived
process fills in the rest while idle (perspect.pipeline.lower).

The values are int8 with one fp32 scale per token, as the version's own states
(perspect.core.index.stance_states). The store is a cache of the index, not part of it: a read
that fails (damaged, locked, read-only) reads nothing, a write that fails keeps nothing, and the
states are computed again; the index itself is never touched.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

KEPT = "lower_states.sqlite"


def digest(key: str, text: str) -> str:
    """The row key of `text`'s states under the states key `key`."""
    return hashlib.sha1(f"{key}\x00{text}".encode()).hexdigest()


class KeptStates:
    """The states kept in one index's folder (`root`), or nowhere where `root` is None."""

    def __init__(self, root: Path | None):
        self.path = None if root is None else Path(root) / KEPT
        self._lock = threading.Lock()  # one writer per process; SQLite orders the processes

    def _connect(self, readonly: bool) -> sqlite3.Connection:
        uri = f"file:{self.path}?mode=ro" if readonly else f"file:{self.path}"
        return sqlite3.connect(uri, uri=True, timeout=2)

    def get_many(self, key: str, texts: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{text: (int8 [tokens, hidden], fp32 scale [tokens])} of the `texts` kept under `key`."""
        if self.path is None or not self.path.is_file() or not texts:
            return {}
        by_digest = {digest(key, t): t for t in texts}
        try:
            rows = self._select("k, n, hidden, q, scale", list(by_digest))
        except (sqlite3.Error, ValueError):
            return {}  # unreadable: computed again
        return {
            by_digest[k]: (
                np.frombuffer(q, dtype=np.int8).reshape(n, h),
                np.frombuffer(sc, dtype="<f4"),
            )
            for k, n, h, q, sc in rows
        }

    def _select(self, columns: str, digests: list[str]) -> list[tuple]:
        """`columns` of the rows of `digests`, 500 keys a query."""
        out: list[tuple] = []
        with self._connect(readonly=True) as db:
            for s in range(0, len(digests), 500):
                part = digests[s : s + 500]
                marks = ",".join("?" * len(part))
                out += db.execute(f"SELECT {columns} FROM s WHERE k IN ({marks})", part).fetchall()
        return out

    def put(self, key: str, rows: Iterable[tuple[str, np.ndarray, np.ndarray]]) -> bool:
        """Keep (text, int8 states, fp32 scales) rows under `key`; False where nothing could be
        written (a read-only or busy index: the caller keeps them in memory only)."""
        if self.path is None:
            return False
        packed = [
            (
                digest(key, t),
                int(q.shape[0]),
                int(q.shape[1]),
                q.tobytes(),
                sc.astype("<f4").tobytes(),
            )
            for t, q, sc in rows
        ]
        if not packed:
            return True
        try:
            with self._lock, self._connect(readonly=False) as db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS s (k TEXT PRIMARY KEY, n INTEGER, hidden INTEGER, "
                    "q BLOB, scale BLOB)"
                )
                db.executemany("INSERT OR REPLACE INTO s VALUES (?, ?, ?, ?, ?)", packed)
            return True
        except (sqlite3.Error, OSError):
            return False

    def count(self) -> int:
        """How many states are kept (under any key); 0 where none can be read."""
        if self.path is None or not self.path.is_file():
            return 0
        try:
            with self._connect(readonly=True) as db:
                return int(db.execute("SELECT COUNT(*) FROM s").fetchone()[0])
        except sqlite3.Error:
            return 0

    def missing(self, key: str, texts: Sequence[str]) -> list[str]:
        """The `texts` not kept under `key`, in their order (reads the row keys only)."""
        if self.path is None or not self.path.is_file():
            return list(texts)
        try:
            have = {k for (k,) in self._select("k", [digest(key, t) for t in texts])}
        except sqlite3.Error:
            return list(texts)
        return [t for t in texts if digest(key, t) not in have]
