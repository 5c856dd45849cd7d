"""The item store of one pool: ids, texts and metadata in SQLite.

Retrieval backends only map text to ids; the store turns ids back into texts and metadata, so every
backend (BM25, ColBERT, Elasticsearch) returns the same hits. SQLite because it is transactional,
in the standard library, and answers id lookups in microseconds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from perspect.core.types import Item

SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL
);
"""
# Metadata a pool's writes index (SQLite expression indexes), for lookups by value without a
# scan of the pool: a news add asks which of its URLs and texts (content hashes) are indexed, and
# a sentence is shown in its article's context (`article`).
_ARTICLES = ("url", "content_hash", "article_id")
INDEXED_METADATA = {"news": _ARTICLES, "documents": _ARTICLES}


def _meta(key: str) -> str:
    if not key.isidentifier():
        raise ValueError(f"not a metadata key: {key!r}")
    return f"json_extract(metadata, '$.{key}')"


class ItemStore:
    FILENAME = "items.sqlite"

    def __init__(self, folder: Path, readonly: bool = False):
        self.path = Path(folder) / self.FILENAME
        if readonly:
            uri = f"file:{self.path}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.executescript(SCHEMA)
            for key in INDEXED_METADATA.get(self.path.parent.name, ()):
                # made once per store, kept by every later version (a store written before
                # these indexes gets them at its next write; until then lookups scan)
                self._db.execute(f"CREATE INDEX IF NOT EXISTS meta_{key} ON items ({_meta(key)})")

    def upsert(self, items: Sequence[Item]) -> int:
        """Insert or replace items; returns how many ids were already present (replaced)."""
        ids = [it.id for it in items]
        replaced = len(self.existing(ids))
        with self._db:
            self._db.executemany(
                "INSERT INTO items (id, text, metadata) VALUES (?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET text=excluded.text, metadata=excluded.metadata",
                [
                    (it.id, it.text, json.dumps(dict(it.metadata), ensure_ascii=False))
                    for it in items
                ],
            )
        return replaced

    def delete(self, ids: Iterable[str]) -> int:
        with self._db:
            cur = self._db.executemany("DELETE FROM items WHERE id = ?", [(i,) for i in ids])
        return cur.rowcount

    def existing(self, ids: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for start in range(0, len(ids), 900):
            chunk = list(ids[start : start + 900])
            q = f"SELECT id FROM items WHERE id IN ({','.join('?' * len(chunk))})"
            found.update(r[0] for r in self._db.execute(q, chunk))
        return found

    def get_many(self, ids: Sequence[str]) -> dict[str, Item]:
        out: dict[str, Item] = {}
        for start in range(0, len(ids), 900):
            chunk = list(ids[start : start + 900])
            q = f"SELECT id, text, metadata FROM items WHERE id IN ({','.join('?' * len(chunk))})"
            for i, t, m in self._db.execute(q, chunk):
                out[i] = Item(id=i, text=t, metadata=json.loads(m))
        return out

    def metadata_values(self, key: str, values: Sequence[str]) -> set[str]:
        """Which of `values` some item holds as its metadata `key`: an index lookup for the keys
        of INDEXED_METADATA (the news add's de-duplication by URL and by content hash)."""
        found: set[str] = set()
        for start in range(0, len(values), 900):
            chunk = list(values[start : start + 900])
            found.update(r[0] for r in self._db.execute(self._lookup(key, len(chunk)), chunk))
        return found

    def _lookup(self, key: str, n: int) -> str:
        return (
            f"SELECT DISTINCT {_meta(key)} FROM items WHERE {_meta(key)} IN ({','.join('?' * n)})"
        )

    def article(self, article_id: str) -> list[Item]:
        """The sentences of one article of an article pool (news, documents), in its order: an
        index lookup by `article_id` (a store written before that index scans until its next
        write)."""
        q = (
            f"SELECT id, text, metadata FROM items WHERE {_meta('article_id')} = ? "
            f"ORDER BY {_meta('position')}, seq"
        )
        return [
            Item(id=i, text=t, metadata=json.loads(m))
            for i, t, m in self._db.execute(q, (article_id,))
        ]

    def article_count(self) -> int:
        """How many articles the pool's sentences come from."""
        q = f"SELECT COUNT(DISTINCT {_meta('article_id')}) FROM items"
        return int(self._db.execute(q).fetchone()[0])

    def get(self, ident: str) -> Item | None:
        return self.get_many([ident]).get(ident)

    def __iter__(self) -> Iterator[Item]:
        for i, t, m in self._db.execute("SELECT id, text, metadata FROM items ORDER BY seq"):
            yield Item(id=i, text=t, metadata=json.loads(m))

    def ids(self) -> list[str]:
        """Every item's id, in insertion order (without texts: a shard's split reads only these)."""
        return [i for (i,) in self._db.execute("SELECT id FROM items ORDER BY seq")]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM items").fetchone()[0]

    def close(self) -> None:
        self._db.close()
