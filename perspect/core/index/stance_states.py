"""The stored lower-layer states of an index's perspectives (`perspectives/stance_states.sqlite`):
the format.

Computed at index time by perspect.indexer (the stance trunk's frozen lower layers, each
perspective alone), read per search for the kept candidates, so a search runs only the claim's
lower layers and the top layers. int8 per value, one fp32 scale per token (absmax): a quarter of
fp32; on dev, stance AUROC moves by under 0.1 point (perspect.lab.train.stance_trunk reports both).
`key` says which base and cut of layers made them: a reader whose trunk differs computes states
itself instead of reading wrong ones. Copied (not shared) by copy-on-write updates.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

STATES = "stance_states.sqlite"


def quantize(states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[tokens, hidden] float -> (int8 [tokens, hidden], fp32 scale [tokens])."""
    x = np.asarray(states, dtype=np.float32)
    scale = np.abs(x).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(x / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def dequantize(q: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return q.astype(np.float32) * scale[:, None]


class States:
    def __init__(self, pool_dir: Path, readonly: bool = True):
        self.path = Path(pool_dir) / STATES
        uri = f"file:{self.path}?mode=ro" if readonly else f"file:{self.path}"
        self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        if not readonly:
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS states (pid TEXT PRIMARY KEY, n INTEGER, hidden "
                "INTEGER, q BLOB, scale BLOB)"
            )
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT)")
            self.db.commit()

    @classmethod
    def exists(cls, pool_dir: Path) -> bool:
        return (Path(pool_dir) / STATES).is_file()

    @property
    def key(self) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE name = 'key'").fetchone()
        return row[0] if row else None

    def set_key(self, key: str) -> None:
        """A new key drops every state made under another one."""
        with self.db:
            if self.key not in (None, key):
                self.db.execute("DELETE FROM states")
            self.db.execute("INSERT OR REPLACE INTO meta VALUES ('key', ?)", (key,))

    def put(self, rows: Iterable[tuple[str, np.ndarray, np.ndarray]]) -> None:
        """(pid, int8 [tokens, hidden], fp32 scale [tokens]) rows, replacing by pid."""
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO states VALUES (?, ?, ?, ?, ?)",
                (
                    (pid, int(q.shape[0]), int(q.shape[1]), q.tobytes(), s.astype("<f4").tobytes())
                    for pid, q, s in rows
                ),
            )

    def get_many(self, pids: Sequence[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        out = {}
        for s in range(0, len(pids), 500):
            chunk = list(pids[s : s + 500])
            marks = ",".join("?" * len(chunk))
            for pid, n, h, q, sc in self.db.execute(
                f"SELECT pid, n, hidden, q, scale FROM states WHERE pid IN ({marks})", chunk
            ):
                out[pid] = (
                    np.frombuffer(q, dtype=np.int8).reshape(n, h),
                    np.frombuffer(sc, dtype="<f4"),
                )
        return out

    def drop(self, pids: Sequence[str]) -> None:
        with self.db:
            self.db.executemany("DELETE FROM states WHERE pid = ?", ((p,) for p in pids))

    def count(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM states").fetchone()[0])

    def close(self) -> None:
        self.db.close()
