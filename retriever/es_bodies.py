"""Request bodies of the Elasticsearch backend, as small pure functions (unit-tested without a
server against the shapes the client documents; perspect.retriever.elastic sends them).

One physical Elasticsearch index per pool and index version holds every retriever's field:
`text` (BM25 with the English analyzer), `dense` (`dense_vector`, HNSW, dot product on unit
vectors) and `colbert` (`rank_vectors`: a document's token vectors, scored by MaxSim in a
`script_score` rescore of BM25 + kNN candidates; no ANN structure of its own). An alias per pool
names the version that serves; a build writes a new physical index and swaps the alias at the end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

PREFIX = "perspect"
MAXSIM = "maxSimDotProduct(params.query_vector, 'colbert')"
# statuses worth another try (the cluster is busy or a shard is moving), with backoff
RETRY_STATUS = frozenset({429, 502, 503, 504})


def physical_name(prefix: str, index: str, pool: str, version: str) -> str:
    """The physical index of one pool of one version: lower-case, as Elasticsearch requires."""
    return _clean(f"{prefix}-{index}-{pool}-{version}")


def alias_name(prefix: str, index: str, pool: str) -> str:
    """The alias that always names the serving version of a pool."""
    return _clean(f"{prefix}-{index}-{pool}")


def _clean(name: str) -> str:
    name = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-_.")
    if not name:
        raise ValueError("empty Elasticsearch index name")
    return name[:255]


def mapping(dense_dims: int | None = None, colbert_dims: int | None = None) -> dict[str, Any]:
    """`indices.create` body (settings + mappings) for the fields this index's retrievers need.
    Item metadata stays in Perspect's item store: the Elasticsearch document carries only what
    is searched, and `_source` keeps no vectors (they are read back through `fields`)."""
    props: dict[str, Any] = {
        "id": {"type": "keyword"},
        "text": {"type": "text", "analyzer": "english"},
    }
    if dense_dims:
        props["dense"] = {
            "type": "dense_vector",
            "dims": int(dense_dims),
            "index": True,
            "similarity": "dot_product",  # unit vectors: the cosine the engine reads
            "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
        }
    if colbert_dims:
        props["colbert"] = {"type": "rank_vectors", "dims": int(colbert_dims)}
    return {
        "settings": {"index": {"number_of_shards": 1, "number_of_replicas": 0}},
        "mappings": {"dynamic": "strict", "properties": props},
    }


def bm25_query(text: str, k: int) -> dict[str, Any]:
    """`search` body: BM25 over the English-analysed text; only ids come back."""
    return {"size": int(k), "query": {"match": {"text": {"query": text}}}, "_source": False}


def knn_query(vector: Sequence[float], k: int, num_candidates: int | None = None) -> dict[str, Any]:
    """`search` body: approximate kNN (HNSW) over `dense`; `num_candidates` per shard trades
    latency for recall (default 4 x k, at least 100)."""
    nc = int(num_candidates or max(100, 4 * int(k)))
    return {
        "size": int(k),
        "knn": {
            "field": "dense",
            "query_vector": _floats(vector),
            "k": int(k),
            "num_candidates": nc,
        },
        "_source": False,
    }


def maxsim_rescore(
    query_tokens: Sequence[Sequence[float]],
    text: str,
    k: int,
    window: int = 100,
    dense: Sequence[float] | None = None,
) -> dict[str, Any]:
    """`search` body for late interaction: first-stage candidates from BM25 (and kNN when a dense
    query vector is given), then the top `window` rescored by MaxSim of the query's token vectors
    against each document's `colbert` rank vectors; the first-stage score is dropped
    (query_weight 0), so the order is ColBERT's alone, as in the embedded PLAID retriever."""
    body: dict[str, Any] = {
        "size": int(k),
        "query": {"match": {"text": {"query": text}}},
        "rescore": {
            "window_size": max(int(window), int(k)),
            "query": {
                "rescore_query": {
                    "script_score": {
                        "query": {"match_all": {}},
                        "script": {
                            "source": MAXSIM,
                            "params": {"query_vector": [_floats(t) for t in query_tokens]},
                        },
                    }
                },
                "query_weight": 0.0,
                "rescore_query_weight": 1.0,
            },
        },
        "_source": False,
    }
    if dense is not None:
        body["knn"] = {
            "field": "dense",
            "query_vector": _floats(dense),
            "k": max(int(window), int(k)),
            "num_candidates": max(100, 2 * int(window)),
        }
    return body


def vectors_query(ids: Sequence[str]) -> dict[str, Any]:
    """`search` body that reads stored dense vectors back (the engine's cosine features)."""
    return {
        "size": len(ids),
        "query": {"ids": {"values": list(ids)}},
        "_source": False,
        "fields": ["dense"],
    }


def index_actions(
    index: str,
    items: Sequence[tuple[str, str]],
    dense: Sequence[Sequence[float]] | None = None,
    colbert: Sequence[Sequence[Sequence[float]]] | None = None,
) -> list[dict[str, Any]]:
    """Bulk lines (action, document, action, document, ...) that index `(id, text)` items with
    their vectors. The Elasticsearch `_id` is the item id: re-adding an item replaces it."""
    lines: list[dict[str, Any]] = []
    for n, (ident, text) in enumerate(items):
        doc: dict[str, Any] = {"id": ident, "text": text}
        if dense is not None:
            doc["dense"] = _floats(dense[n])
        if colbert is not None:
            doc["colbert"] = [_floats(t) for t in colbert[n]]
        lines += [{"index": {"_index": index, "_id": ident}}, doc]
    return lines


def delete_actions(index: str, ids: Iterable[str]) -> list[dict[str, Any]]:
    return [{"delete": {"_index": index, "_id": i}} for i in ids]


def alias_actions(alias: str, new: str, old: Iterable[str] = ()) -> dict[str, Any]:
    """`indices.update_aliases` body that moves `alias` to `new` in one atomic step."""
    acts: list[dict[str, Any]] = [{"remove": {"index": o, "alias": alias}} for o in old if o != new]
    acts.append({"add": {"index": new, "alias": alias}})
    return {"actions": acts}


def bulk_failures(response: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(id, status, reason) of every failed action in a `bulk` response; deleting an id that is
    not there (404) is not a failure."""
    if not response.get("errors"):
        return []
    out = []
    for entry in response.get("items", []):
        ((op, res),) = entry.items()
        status = int(res.get("status", 0))
        if status < 300 or (op == "delete" and status == 404):
            continue
        err = res.get("error") or {}
        reason = err.get("reason") if isinstance(err, dict) else str(err)
        kind = err.get("type") if isinstance(err, dict) else None
        out.append((str(res.get("_id")), status, f"{kind}: {reason}" if kind else str(reason)))
    return out


def retry_ids(response: dict[str, Any]) -> set[str]:
    """Ids whose action failed with a status worth retrying (429: too many requests, 503...)."""
    return {i for i, status, _ in bulk_failures(response) if status in RETRY_STATUS}


def backoff(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:
    """Seconds to wait before retry `attempt` (1, 2, ...): exponential, capped."""
    return min(cap, base * 2 ** (attempt - 1))


def hits(response: dict[str, Any]) -> list[tuple[str, float]]:
    """(id, score) pairs of a `search` response, best first."""
    return [(h["_id"], float(h["_score"] or 0.0)) for h in response["hits"]["hits"]]


def _floats(v: Sequence[float]) -> list[float]:
    return [float(x) for x in v]
