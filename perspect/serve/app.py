"""The routes of `perspect serve` and `run`, which starts uvicorn (one process, or `workers`
processes sharing the port, each with its own engines; the index on disk is what they share).

The answers are those of the CLI's `--json`: POST /search is `perspect search --json` (with
`pool` or `retriever`: `--retrieval-only`), POST /compare is `perspect compare --json`, POST
/indexes/{name}/news is `perspect news add --json`. A search's answer carries the index version
it read in the `X-Perspect-Index-Version` header: a search pins one version from start to end,
and one that starts after an add is published reads the new one.
"""

from __future__ import annotations

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from perspect import api
from perspect.core.errors import IndexDamaged, PerspectError
from perspect.core.index.config import check_name
from perspect.core.types import POOLS
from perspect.serve import errors
from perspect.serve.config import ENV, ServeConfig
from perspect.serve.engines import Engines

VERSION_HEADER = "X-Perspect-Index-Version"
WORKER_HEADER = "X-Perspect-Worker"  # the worker process's pid (several with --workers N)
log = logging.getLogger("perspect.serve")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SearchRequest(_Strict):
    claim: str
    k: int | None = Field(None, description="at most this many clusters (hits when retrieval only)")
    fast: bool = Field(False, description="int8 cross-encoders, bounded equivalence pairs")
    pool: str | None = Field(None, description="retrieval only, from this pool")
    retriever: str | None = Field(None, description="retrieval only, with this retriever")


class ArticleIn(_Strict):
    title: str = ""
    text: str


class CompareRequest(_Strict):
    a: ArticleIn
    b: ArticleIn


class NewsRequest(_Strict):
    articles: list[str | dict[str, Any]] = Field(
        description="URLs of pages or RSS/Atom feeds, or article objects (title, outlet, date, "
        "url, text)"
    )


def create_app(config: ServeConfig) -> FastAPI:
    engines = Engines(config)
    writer = ThreadPoolExecutor(2, "perspect-news")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engines.start()
        yield
        engines.close()
        writer.shutdown(wait=True)

    app = FastAPI(
        title="Perspect",
        version="0.1.0",
        description="Perspective search: diverse, substantiated perspectives on a claim.",
        lifespan=lifespan,
    )
    errors.install(app)
    app.add_middleware(errors.BodyLimit, limit=config.max_body_bytes)
    app.state.engines = engines

    @app.get("/health")
    async def health() -> dict[str, Any]:
        """The process is up (the models may still be loading)."""
        return {"status": "ok", "pid": os.getpid()}

    @app.get("/ready")
    async def ready():
        """200 once the index is open and the models are loaded, else 503."""
        body = {
            "ready": engines.ready,
            "index": config.index,
            "pid": os.getpid(),
            "engines": engines.status(),
        }
        return JSONResponse(body, status_code=200 if engines.ready else 503)

    @app.get("/indexes")
    async def indexes() -> dict[str, Any]:
        home, rows = await asyncio.to_thread(api.index_status, None, config.home)
        return {
            "home": str(home),
            "served": config.index,
            "indexes": [
                {"name": m["name"], "damaged": m["damaged"]}
                if m.get("damaged")
                else {
                    "name": m["name"],
                    "version": m["version"],
                    "pools": {p: e["count"] for p, e in m["pools"].items()},
                    "updated_at": m.get("updated_at"),
                }
                for m in rows
            ],
        }

    @app.post("/search")
    async def search(req: SearchRequest):
        """The full pipeline (`perspect search --json`), or plain retrieval with `pool` or
        `retriever`."""
        claim = req.claim
        if len(claim) > config.max_claim_chars:
            raise PerspectError(f"claim is longer than {config.max_claim_chars} characters")
        if req.k is not None and not 1 <= req.k <= config.max_k:
            raise PerspectError(f"k must be in 1..{config.max_k}, got {req.k}")
        if req.pool is not None and req.pool not in POOLS:
            raise PerspectError(f"unknown pool {req.pool!r}: one of {', '.join(POOLS)}")
        got = await engines.search(claim, req.k, req.fast, req.pool, req.retriever)
        headers = {VERSION_HEADER: got.version, WORKER_HEADER: str(os.getpid())}
        return JSONResponse(got.body, headers=headers)

    @app.post("/compare")
    async def compare(req: CompareRequest) -> dict[str, Any]:
        """Article A against article B, point by point (`perspect compare --json`)."""
        for name, art in (("a", req.a), ("b", req.b)):
            if len(art.text) > config.max_body_bytes:
                raise PerspectError(f"article {name} is over the body limit")
        return await engines.compare((req.a.title, req.a.text), (req.b.title, req.b.text))

    @app.post("/indexes/{name}/news")
    async def add_news(name: str, req: NewsRequest) -> dict[str, Any]:
        """Fetch and add news (the report of `perspect news add --json`). Adds to one index
        are serialised by its writer lock: each waits for the one before, none is lost."""
        check_name(name)
        if not req.articles:
            raise PerspectError("no articles: pass URLs or article objects")
        if len(req.articles) > config.max_news_inputs:
            raise PerspectError(f"at most {config.max_news_inputs} articles per request")
        loop = asyncio.get_running_loop()
        report = await loop.run_in_executor(
            writer,
            lambda: api.add_news(
                name,
                req.articles,
                home=config.home,
                timeout=config.fetch_timeout_s,
                budget=config.time_budget_s,  # for fetching; the write is not cut short
                wait=config.writer_wait_s,
            ),
        )
        return report.to_json()

    return app


def from_env() -> FastAPI:
    """The app of one worker process (`uvicorn ... --factory`): settings from $PERSPECT_SERVE_CONFIG."""
    return create_app(ServeConfig.from_env())


def run(config: ServeConfig) -> None:
    """Serve until interrupted. The index must exist (refused before anything starts)."""
    import uvicorn

    _, (row,) = api.index_status(config.index, config.home)
    if row.get("damaged"):
        raise IndexDamaged(row["damaged"], hint=row.get("hint"))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    common = dict(
        host=config.host,
        port=config.port,
        access_log=config.access_log,
        log_level="info",
        timeout_graceful_shutdown=5,
    )
    if config.workers == 1:
        uvicorn.run(create_app(config), **common)
        return
    os.environ[ENV] = config.to_env()
    uvicorn.run("perspect.serve.app:from_env", factory=True, workers=config.workers, **common)
