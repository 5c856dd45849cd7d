"""Which class serves a retriever kind: the one place that knows every backend.

It sits above the backends and below their users (the searcher, the indexer), so no backend
imports another to be found and `base` imports none of them. Each backend module is imported only
when its kind is asked for: tantivy, faiss, PyLate and the Elasticsearch client are heavy, and a
BM25-only index should not pay for the others.
"""

from __future__ import annotations

from typing import Any

from perspect.core.errors import PerspectError
from perspect.retriever.base import Backend

EMBEDDED = "embedded"
ELASTICSEARCH = "elasticsearch"
KINDS = ("bm25", "dense", "colbert")


def _embedded(kind: str) -> type[Backend]:
    if kind == "bm25":
        from perspect.retriever.bm25 import TantivyBM25

        return TantivyBM25
    if kind == "dense":
        from perspect.retriever.dense import DenseBackend

        return DenseBackend
    from perspect.retriever.colbert import ColBERTBackend

    return ColBERTBackend


def _elasticsearch(kind: str) -> type[Backend]:
    from perspect.retriever import elastic

    return {"bm25": elastic.EsBM25, "dense": elastic.EsDense, "colbert": elastic.EsColBERT}[kind]


def backend_class(kind: str, config: dict[str, Any] | None = None) -> type[Backend]:
    """The class serving retriever `kind`: embedded, or Elasticsearch where the retriever's
    config says `"engine": "elasticsearch"` (perspect.retriever.elastic)."""
    engine = (config or {}).get("engine", EMBEDDED)
    if engine not in (EMBEDDED, ELASTICSEARCH):
        raise PerspectError(
            f"unknown retrieval engine {engine!r}", hint=f"{EMBEDDED} or {ELASTICSEARCH}"
        )
    if kind not in KINDS:
        raise PerspectError(f"unknown retriever {kind!r}", hint=f"known: {', '.join(KINDS)}")
    return _elasticsearch(kind) if engine == ELASTICSEARCH else _embedded(kind)
