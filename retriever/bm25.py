"""Embedded BM25 over tantivy.

tantivy (Lucene's design in Rust) gives an on-disk index with incremental add/delete, atomic commits
and Lucene BM25 (k1=1.2, b=0.75) at microsecond-per-query speed; bm25s would need a full re-index on
every add. The analyzer is Lucene's English one: lowercase, ASCII folding, Lucene's stop words, Porter
stemming. Queries are analyzed with the same analyzer and sent as a disjunction of term queries, so
punctuation or words like AND/NOT in a claim are never parsed as query syntax.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tantivy

from perspect.core.types import Item
from perspect.retriever.base import Backend, ProgressFn

ANALYZER = "en_perspect"
DEFAULT_CONFIG: dict[str, Any] = {
    "analyzer": "simple|remove_long(40)|lowercase|ascii_fold|stopword(english)|stemmer(english)",
    "k1": 1.2,
    "b": 0.75,
    "writer_heap_bytes": 64_000_000,
}
# tantivy segment files are write-once (<uuid>.<ext>); meta.json / .managed.json are rewritten.
_SEGMENT_FILE = re.compile(r"^[0-9a-f]{32}(\.\d+)?\.[a-z]+$")


def _analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stopword("english"))
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


def _open_read_only(folder: Path) -> tantivy.Index:
    """tantivy takes a lock file in the index folder even to read, which fails on read-only media
    (a DVD, a read-only mount, another user's index). Its files are only read, so a scratch folder
    of symbolic links to them takes the lock instead; it lives as long as the process."""
    scratch = Path(tempfile.mkdtemp(prefix="perspect-bm25-ro-"))
    atexit.register(shutil.rmtree, scratch, True)
    for f in folder.iterdir():
        if f.is_file() and not f.name.endswith(".lock"):
            (scratch / f.name).symlink_to(f.resolve())
    return tantivy.Index.open(str(scratch))


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return sb.build()


class TantivyBM25(Backend):
    kind = "bm25"

    def __init__(self, folder: Path, config: dict[str, Any], index: tantivy.Index, writable: bool):
        super().__init__(folder, {**DEFAULT_CONFIG, **config})
        self._index = index
        self._analyzer = _analyzer()
        self._index.register_tokenizer(ANALYZER, self._analyzer)
        self._schema = index.schema
        self._writer = None
        self._writable = writable
        self._dirty = False

    @classmethod
    def create(cls, folder: Path, config: dict[str, Any]) -> TantivyBM25:
        folder.mkdir(parents=True, exist_ok=False)
        # The analyzer must be registered before the index is created, or tantivy rejects the schema.
        idx = tantivy.Index(_schema(), path=str(folder))
        return cls(folder, config, idx, writable=True)

    @classmethod
    def open(cls, folder: Path, config: dict[str, Any], writable: bool = False) -> TantivyBM25:
        if not writable and not os.access(folder, os.W_OK):
            return cls(folder, config, _open_read_only(folder), writable)
        idx = tantivy.Index.open(str(folder))
        return cls(folder, config, idx, writable)

    def _w(self) -> tantivy.IndexWriter:
        if not self._writable:
            raise RuntimeError("backend opened read-only")
        if self._writer is None:
            self._writer = self._index.writer(int(self.config["writer_heap_bytes"]), 1)
        return self._writer

    def add(self, items: Sequence[Item], progress: ProgressFn | None = None) -> None:
        w = self._w()
        step = 0
        for it in items:
            w.delete_documents_by_term("id", it.id)
            w.add_document(tantivy.Document(id=it.id, text=it.text))
            step += 1
            if progress and step == 1000:
                progress(step)
                step = 0
        if progress and step:
            progress(step)
        self._dirty = True

    def delete(self, ids: Sequence[str]) -> None:
        w = self._w()
        for i in ids:
            w.delete_documents_by_term("id", i)
        self._dirty = True

    def commit(self) -> None:
        if self._writer is not None and self._dirty:
            self._writer.commit()
            self._writer.wait_merging_threads()
            self._writer = None
            self._dirty = False
        self._index.reload()

    def tokens(self, text: str) -> list[str]:
        return self._analyzer.analyze(text)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        terms = list(dict.fromkeys(self.tokens(query)))
        if not terms or k <= 0:
            return []
        q = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "text", t))
                for t in terms
            ]
        )
        searcher = self._index.searcher()
        res = searcher.search(q, limit=k, count=False)
        return [(searcher.doc(addr)["id"][0], float(score)) for score, addr in res.hits]

    def count(self) -> int:
        return self._index.searcher().num_docs

    def close(self) -> None:
        if self._writer is not None:
            self._writer.rollback()
            self._writer = None

    @staticmethod
    def immutable_file(name: str) -> bool:
        return bool(_SEGMENT_FILE.match(name))

    @classmethod
    def library_versions(cls) -> dict[str, str]:
        from importlib.metadata import version

        return {"tantivy": version("tantivy")}
