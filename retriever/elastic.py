"""Elasticsearch backends for the three retrievers, behind the same `Backend` interface.

Why: the embedded engines (tantivy, faiss, PLAID) serve one machine; a news pool that grows by
millions of sentences a year needs a distributed engine (docs/scale-out.md). The item store and
the engine stay the same: only (id, score) lists and stored vectors come from Elasticsearch.

Layout: each retriever of each pool of each index *version* is one physical Elasticsearch index
(`perspect-<index>-<pool>-<kind>-<version>`), named in a small `es.json` in the version's backend
folder; an alias without the version names the serving one. A version is immutable once published,
as in the embedded store: a write clones the serving physical index (Elasticsearch `_clone`,
segments shared, after a write block on the source) and writes into the clone, and publishing
moves the alias in one atomic `update_aliases`. An interrupted build or add leaves the previous
version, its physical index and its alias serving; its leftover index is removed at the next
publish. Searches read the physical index of the version they are pinned to.

Credentials come from the environment, never from the index config: `PERSPECT_ES_API_KEY`, or
`PERSPECT_ES_USER` and `PERSPECT_ES_PASSWORD`; TLS certificates are verified unless
`PERSPECT_ES_VERIFY_CERTS=0`. Request bodies: perspect.retriever.es_bodies.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perspect.core.errors import PerspectError
from perspect.core.types import Item
from perspect.retriever import es_bodies as body
from perspect.retriever.base import Backend, ProgressFn

ENGINE = "elasticsearch"
STATE = "es.json"
BULK_DOCS = 256  # documents per bulk request (ColBERT documents carry ~30 x 128 floats each)
MAX_RETRIES = 5
_CLIENTS: dict[tuple, Any] = {}


def redact(url: str) -> str:
    """`url` without credentials, for messages (https://user:secret@host -> https://host)."""
    return re.sub(r"//[^/@]*@", "//", url)


def es_url(config: dict[str, Any]) -> str:
    url = os.environ.get("PERSPECT_ES_URL") or config.get("url")
    if not url:
        raise PerspectError(
            "no Elasticsearch URL for this index",
            hint="pass --es-url URL (or set PERSPECT_ES_URL)",
        )
    return str(url)


def client(config: dict[str, Any]):
    """An `elasticsearch.Elasticsearch` client for the index config's URL, made once per process
    (it pools connections); retries whole requests on 429/502/503/504 with backoff."""
    url = es_url(config)
    key = os.environ.get("PERSPECT_ES_API_KEY")
    user, pw = os.environ.get("PERSPECT_ES_USER"), os.environ.get("PERSPECT_ES_PASSWORD")
    verify = os.environ.get("PERSPECT_ES_VERIFY_CERTS", "1") not in ("0", "false", "no")
    ident = (url, key, user, pw, verify)
    if ident not in _CLIENTS:
        try:
            from elasticsearch import Elasticsearch
        except ImportError:
            raise PerspectError(
                "the Elasticsearch backend needs the elasticsearch client",
                hint="pip install 'perspect[elasticsearch]'",
            ) from None
        kw: dict[str, Any] = {
            "request_timeout": float(config.get("timeout", 30)),
            "max_retries": 3,
            "retry_on_status": tuple(sorted(body.RETRY_STATUS)),
            "retry_on_timeout": True,
        }
        if url.startswith("https"):
            kw["verify_certs"] = verify
        if key:
            kw["api_key"] = key
        elif user:
            kw["basic_auth"] = (user, pw or "")
        _CLIENTS[ident] = Elasticsearch(url, **kw)
    return _CLIENTS[ident]


def call(config: dict[str, Any], what: str, fn):
    """`fn(client)`, with a connection or API failure turned into one clear line."""
    try:
        return fn(client(config))
    except PerspectError:
        raise
    except Exception as e:  # the client's ConnectionError, ApiError, TransportError...
        url = redact(es_url(config))
        name = type(e).__name__
        if name in ("ConnectionError", "ConnectionTimeout"):
            raise PerspectError(
                f"cannot reach Elasticsearch at {url} ({what})",
                hint="check --es-url / PERSPECT_ES_URL and that the cluster is up",
            ) from None
        detail = str(getattr(e, "message", "") or e).splitlines()[0][:300]
        raise PerspectError(f"Elasticsearch {what} failed at {url}: {name}: {detail}") from None


def _names(folder: Path, config: dict[str, Any], kind: str) -> tuple[str, str]:
    """(physical index, alias) for the backend folder `<home>/<index>/versions/<v>/<pool>/<kind>`."""
    version, pool = folder.parent.parent.name, folder.parent.name
    index = folder.parent.parent.parent.parent.name
    prefix = str(config.get("prefix", body.PREFIX))
    return (
        body.physical_name(prefix, index, f"{pool}-{kind}", version),
        body.alias_name(prefix, index, f"{pool}-{kind}"),
    )


class EsBackend(Backend):
    """Shared lifecycle of the three Elasticsearch retrievers; subclasses say what a document
    holds (`_documents`) and how a query is asked (`search`)."""

    def __init__(self, folder: Path, config: dict[str, Any], state: dict[str, Any]):
        super().__init__(folder, config)
        self.state = state

    @property
    def physical(self) -> str:
        return self.state["physical"]

    # -- lifecycle -------------------------------------------------------------------------------
    @classmethod
    def create(cls, folder: Path, config: dict[str, Any]) -> EsBackend:
        physical, alias = _names(folder, config, cls.kind)
        b = cls(folder, config, {"physical": physical, "alias": alias, "count": 0})
        dims = b._dims()
        call(config, "create index", lambda es: _recreate(es, physical, body.mapping(**dims)))
        folder.mkdir(parents=True, exist_ok=False)
        b._save()
        return b

    @classmethod
    def open(cls, folder: Path, config: dict[str, Any], writable: bool = False) -> EsBackend:
        p = folder / STATE
        if not p.is_file():
            raise PerspectError(f"Elasticsearch backend at {folder} is incomplete (no {STATE})")
        state = json.loads(p.read_text())
        b = cls(folder, config, state)
        physical, _ = _names(folder, config, cls.kind)
        if writable and state["physical"] != physical:
            # a copy of the previous version's folder: write into a clone, never into the source
            src = state["physical"]
            call(config, "clone index", lambda es: _clone(es, src, physical))
            b.state = {**state, "physical": physical}
            b._save()
        return b

    def _save(self) -> None:
        (self.folder / STATE).write_text(json.dumps(self.state, indent=2))

    def _dims(self) -> dict[str, int]:
        return {}

    def add(self, items: Sequence[Item], progress: ProgressFn | None = None) -> None:
        for s in range(0, len(items), BULK_DOCS):
            chunk = items[s : s + BULK_DOCS]
            lines = self._documents(chunk)
            self._bulk(lines, "index")
            if progress:
                progress(len(chunk))

    def delete(self, ids: Sequence[str]) -> None:
        for s in range(0, len(ids), 1000):
            self._bulk(body.delete_actions(self.physical, ids[s : s + 1000]), "delete")

    def _bulk(self, lines: list[dict[str, Any]], what: str) -> None:
        """Send bulk `lines`, re-sending the actions that failed with 429/503... with backoff;
        any other failure (or retries exhausted) raises with the ids and reasons: a document is
        never dropped silently."""
        pending = lines
        for attempt in range(1, MAX_RETRIES + 2):
            resp = call(self.config, f"bulk {what}", lambda es, x=pending: es.bulk(operations=x))
            resp = dict(resp)
            failed = body.bulk_failures(resp)
            if not failed:
                return
            retry = body.retry_ids(resp)
            hard = [f for f in failed if f[0] not in retry]
            if hard or attempt > MAX_RETRIES:
                shown = "; ".join(f"{i}: {st} {why}" for i, st, why in (hard or failed)[:5])
                more = len(hard or failed) - 5
                raise PerspectError(
                    f"Elasticsearch refused {len(hard or failed)} documents of {self.physical}: "
                    f"{shown}" + (f" (and {more} more)" if more > 0 else "")
                )
            pending = _only(pending, retry)
            time.sleep(body.backoff(attempt))

    def commit(self) -> None:
        call(self.config, "refresh", lambda es: es.indices.refresh(index=self.physical))
        self.state["count"] = self.count()
        self._save()

    def count(self) -> int:
        got = call(self.config, "count", lambda es: es.count(index=self.physical))
        return int(got["count"])

    def _search(self, request: dict[str, Any]) -> list[tuple[str, float]]:
        got = call(self.config, "search", lambda es: es.search(index=self.physical, **request))
        return body.hits(dict(got))

    @classmethod
    def on_published(cls, folder: Path, config: dict[str, Any]) -> None:
        """After the version holding `folder` went live: move the alias to its physical index and
        drop physical indexes of this pool and retriever whose version folder is gone (old
        versions, interrupted builds)."""
        state = json.loads((folder / STATE).read_text())
        versions = folder.parent.parent.parent
        live = set()
        for v in versions.iterdir() if versions.is_dir() else ():
            p = v / folder.parent.name / folder.name / STATE
            if p.is_file():
                live.add(json.loads(p.read_text())["physical"])

        def swap(es) -> None:
            alias, new = state["alias"], state["physical"]
            old = (
                list(es.indices.get_alias(name=alias))
                if es.indices.exists_alias(name=alias)
                else []
            )
            es.indices.update_aliases(**body.alias_actions(alias, new, old))
            for name in es.indices.get(index=f"{alias}-*", expand_wildcards="open"):
                if name not in live and name != new:
                    es.indices.delete(index=name, ignore_unavailable=True)

        call(config, "alias swap", swap)


def _recreate(es, name: str, mapping: dict[str, Any]) -> None:
    """A fresh physical index (a leftover of an interrupted build of the same version is replaced)."""
    es.indices.delete(index=name, ignore_unavailable=True)
    es.indices.create(index=name, **mapping)


def _clone(es, src: str, dst: str) -> None:
    es.indices.delete(index=dst, ignore_unavailable=True)
    # a published version is immutable anyway; the clone API requires the write block
    es.indices.put_settings(index=src, settings={"index.blocks.write": True})
    es.indices.clone(index=src, target=dst, settings={"index.blocks.write": False})
    es.cluster.health(index=dst, wait_for_status="yellow", timeout="60s")


def _only(lines: list[dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
    """The bulk lines (action + its document, if any) of the actions on `ids`."""
    out, n = [], 0
    while n < len(lines):
        action = lines[n]
        ((op, meta),) = action.items()
        width = 1 if op == "delete" else 2
        if meta.get("_id") in ids:
            out += lines[n : n + width]
        n += width
    return out


class EsBM25(EsBackend):
    kind = "bm25"

    def _documents(self, items: Sequence[Item]) -> list[dict[str, Any]]:
        return body.index_actions(self.physical, [(it.id, it.text) for it in items])

    _analyzer = None  # built once: the engine asks for the stems of every kept perspective

    def tokens(self, text: str) -> list[str]:
        """The engine's word stems (equivalence features): the embedded analyzer, locally, so a
        search makes no extra round trips."""
        if EsBM25._analyzer is None:
            from perspect.retriever.bm25 import _analyzer

            EsBM25._analyzer = _analyzer()
        return EsBM25._analyzer.analyze(text)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return self._search(body.bm25_query(query, k)) if k > 0 and query.strip() else []


class EsDense(EsBackend):
    """Dense retrieval with HNSW in Elasticsearch; the encoder is the embedded dense backend's
    (same model, same ONNX query path), and stored vectors are read back for the engine."""

    kind = "dense"

    def __init__(self, folder: Path, config: dict[str, Any], state: dict[str, Any]):
        from perspect.retriever.dense import DenseBackend

        super().__init__(folder, config, state)
        self.encoder = DenseBackend(folder, {k: v for k, v in config.items() if k != "engine"})
        self.config = self.encoder.config | {"engine": ENGINE}

    def _dims(self) -> dict[str, int]:
        return {"dense_dims": int(self.encoder.model.get_sentence_embedding_dimension())}

    def _documents(self, items: Sequence[Item]) -> list[dict[str, Any]]:
        from perspect.retriever.dense import encode

        vecs = encode(self.encoder.model, [it.text for it in items])
        return body.index_actions(self.physical, [(it.id, it.text) for it in items], dense=vecs)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encoder.embed_queries(texts)

    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        dim = self._dims()["dense_dims"]
        out = np.zeros((len(ids), dim), dtype=np.float32)
        if not ids:
            return out
        got = call(
            self.config,
            "read vectors",
            lambda es: es.search(index=self.physical, **body.vectors_query(ids)),
        )
        pos = {i: n for n, i in enumerate(ids)}
        for h in got["hits"]["hits"]:
            v = (h.get("fields") or {}).get("dense")
            if v is not None and h["_id"] in pos:
                out[pos[h["_id"]]] = np.asarray(v, dtype=np.float32).reshape(-1)[:dim]
        return out

    def search_vectors(self, q: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        # dot_product similarity scores (1 + cos) / 2: back to the cosine the engine reads
        return [
            [(i, 2 * s - 1) for i, s in self._search(body.knn_query(row, k))] if k > 0 else []
            for row in np.asarray(q, dtype=np.float32)
        ]

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        return self.search_vectors(self.embed_queries([query]), k)[0]


class EsColBERT(EsBackend):
    """Late interaction: BM25 candidates rescored by MaxSim over `rank_vectors` (the ColBERT
    model and query encoder are the embedded backend's)."""

    kind = "colbert"

    def __init__(self, folder: Path, config: dict[str, Any], state: dict[str, Any]):
        from perspect.retriever import colbert

        super().__init__(folder, config, state)
        model = state.get("model") or str(colbert.default_model())
        fp = colbert.model_fingerprint(model)
        state.setdefault("model", model)
        if state.setdefault("model_fingerprint", fp) != fp:
            raise PerspectError(
                f"the ColBERT model at {model} changed since this index was built",
                hint="re-encode it: perspect index rebuild --name NAME --retriever colbert",
            )
        enc_state = {"model": model, "model_fingerprint": fp}
        cfg = {k: v for k, v in config.items() if k != "engine"}
        self.encoder = colbert.ColBERTBackend(folder, cfg, enc_state)

    def _dims(self) -> dict[str, int]:
        return {"colbert_dims": int(self.encoder._dim())}

    def _documents(self, items: Sequence[Item]) -> list[dict[str, Any]]:
        embs = self.encoder.encode([it.text for it in items], is_query=False)
        embs = [np.asarray(e, dtype=np.float32) for e in embs]
        return body.index_actions(self.physical, [(it.id, it.text) for it in items], colbert=embs)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        if k <= 0 or not query.strip():
            return []
        q = np.asarray(self.encoder.encode([query], is_query=True)[0], dtype=np.float32)
        window = int(self.config.get("rescore_window", 100))
        return self._search(body.maxsim_rescore(q.tolist(), query, k, window))
