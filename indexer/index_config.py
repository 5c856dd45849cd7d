"""The configuration of an index build: which retrievers, with which models and settings, on
which engine. Chosen here, below the API, from what the user gave (a colbert-ai plan.json, model
folders, an Elasticsearch URL) or the defaults; the index records it (perspect.core.index.config)
and keeps using it, so model paths are resolved here once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perspect.core import paths
from perspect.core.errors import PerspectError
from perspect.core.index import manifest as mf
from perspect.core.index.config import IndexConfig, check_name, default_retrievers, resolve_home
from perspect.core.index.layout import IndexDir
from perspect.core.types import COLBERT_POOLS, POOLS
from perspect.retriever import dense


def index_config(
    retrievers: Sequence[str] | None = None,
    dense_model: str | None = None,
    colbert_model: str | None = None,
    colbert_config: str | Path | None = None,
    engine: str = "embedded",
    es_url: str | None = None,
    note: Callable[[str], None] = lambda msg: None,
    colbert_pools: Sequence[str] | None = None,
    stance_states: bool = False,
) -> IndexConfig:
    """Retrievers and their settings for a build: as given, from a colbert-ai plan.json, or the
    defaults (BM25 + dense, + ColBERT where its model exists). Model paths are resolved, since
    the index records them and keeps using them. `note` hears what was chosen for the user.
    `colbert_pools`: the pools ColBERT indexes (default COLBERT_POOLS; every pool: POOLS);
    `stance_states`: store every item's lower states at build time instead of at first touch."""
    if retrievers:
        chosen = tuple(retrievers)
    else:
        chosen = default_retrievers()
        if paths.env_retrievers():
            note(f"retrievers from $PERSPECT_RETRIEVERS: {' + '.join(chosen)}")
        elif "colbert" not in chosen:
            note(
                f"no ColBERT model at {paths.colbert_model()}: building BM25 + dense "
                "(train one with `perspect train --task colbert`, or pass --colbert-model)"
            )
    backends: dict[str, dict] = {}
    if "colbert" in chosen:
        options: dict = {}
        if colbert_config:
            from perspect.indexer.colbert_config import from_colbert_json

            imported = from_colbert_json(colbert_config)
            cfg = imported.config.to_json()
            checkpoint = cfg.pop("checkpoint")
            options.update({k: v for k, v in cfg.items() if v is not None})
            note(
                f"read {imported.source}: {', '.join(f'{k}={v}' for k, v in options.items())}"
                f" (ignored {len(imported.ignored)} run/training settings)"
            )
            if checkpoint and not colbert_model:
                options["model"] = _plan_model(checkpoint, note)
        if colbert_model:
            options["model"] = _local_colbert(colbert_model) or colbert_model
        pools = tuple(colbert_pools) if colbert_pools else COLBERT_POOLS
        unknown = sorted(set(pools) - set(POOLS))
        if unknown:
            raise PerspectError(f"unknown pool {unknown[0]!r}", hint=f"of: {', '.join(POOLS)}")
        if "perspectives" not in pools:
            raise PerspectError("ColBERT must index the perspectives (the search reads them)")
        covered = set(pools) | ({"documents"} if "news" in pools else set())
        if covered != set(POOLS):  # documents go where news goes (IndexConfig.for_pool)
            options["pools"] = [p for p in POOLS if p in pools]
        backends["colbert"] = options
    if "dense" in chosen:
        backends["dense"] = {"model": resolved_model(dense_model or dense.default_model())}
    if engine == "elasticsearch":
        import os

        from perspect.retriever.elastic import redact

        url = es_url or os.environ.get("PERSPECT_ES_URL")
        if not url:
            raise PerspectError(
                "the Elasticsearch backend needs a cluster URL",
                hint="pass --es-url URL (or set PERSPECT_ES_URL)",
            )
        if redact(url) != url:
            note(
                "credentials in the URL are used for this run only: the index stores the URL "
                "without them (set PERSPECT_ES_API_KEY or PERSPECT_ES_USER/PASSWORD for later)"
            )
        for kind in chosen:
            backends[kind] = {**backends.get(kind, {}), "engine": engine, "url": redact(url)}
    elif engine != "embedded":
        raise PerspectError(f"unknown backend {engine!r}", hint="embedded or elasticsearch")
    return IndexConfig(retrievers=chosen, backends=backends, stance_states=stance_states)


def _plan_model(checkpoint: str, note: Callable[[str], None]) -> str:
    """The ColBERT model a plan.json names, as a local folder: itself, its copy in the Hugging
    Face cache, or (offline, e.g. RAGatouille's `colbert-ir/colbertv2.0`) the bundle's model with
    the plan's index settings, said in a note. Index builds read a model from a folder only."""
    found = _local_colbert(checkpoint)
    if found:
        return found
    fallback = paths.colbert_model()
    if not fallback.is_dir():
        raise PerspectError(
            f"the plan's ColBERT model {checkpoint} is neither a local folder nor in the "
            "Hugging Face cache, and there is no bundle ColBERT model to use instead",
            hint="pass --colbert-model FOLDER (or train one: perspect train --task colbert)",
        )
    note(
        f"the plan's model {checkpoint} cannot be loaded offline: using the bundle's ColBERT "
        f"model ({fallback}) with the plan's index settings (--colbert-model picks another)"
    )
    return str(fallback.resolve())


def _local_colbert(name: str) -> str | None:
    """A model folder, or a hub id's copy in the Hugging Face cache; None when neither exists
    (a build never downloads)."""
    local = Path(name).expanduser()
    if local.is_dir():
        return str(local.resolve())
    try:
        from huggingface_hub import snapshot_download

        return snapshot_download(name, local_files_only=True)
    except Exception:  # not cached, or not a valid hub id
        return None


def index_engine(manifest: dict[str, Any]) -> str:
    """ "elasticsearch" when the index's retrievers live there, else "embedded"."""
    backends = manifest["config"].get("backends", {})
    return (
        "elasticsearch"
        if any(b.get("engine") == "elasticsearch" for b in backends.values())
        else "embedded"
    )


def check_engine(name: str, engine: str | None, home: str | Path | None = None) -> None:
    """Refuse a write that names a backend other than the one the index was built on."""
    if engine is None:
        return
    got = index_engine(mf.load(IndexDir(resolve_home(home), check_name(name)).current()))
    if got != engine:
        raise PerspectError(
            f"index {name!r} lives on the {got} backend, not {engine}",
            hint=f"drop --backend, or rebuild it: perspect index build --backend {engine}",
        )


def rebuild_options(retriever: str, model: str | None = None) -> dict[str, Any]:
    """The options of a rebuild with `retriever`: `model`, else (dense, ColBERT) its default."""
    if model:
        return {"model": resolved_model(model)}
    if retriever in ("dense", "colbert"):
        from perspect.retriever import colbert

        default = dense.default_model() if retriever == "dense" else colbert.default_model()
        return {"model": resolved_model(str(default))}
    return {}


def resolved_model(model: str) -> str:
    """A model folder's absolute path (the index keeps using it), or a hub id as it is."""
    return str(Path(model).resolve()) if Path(model).exists() else model
