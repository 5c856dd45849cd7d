"""The routes of `perspect serve` and `run`, which starts uvicorn (one process, or `workers`
processes sharing the port, each with its own engines; the index on disk is what they share).

The answers are those of the CLI's `--json`: POST /search is `perspect search --json` (with
`pool` or `retriever`: `--retrieval-only`), POST /compare is `perspect compare --json`, POST
/indexes/{name}/news is `perspect news add --json` (/indexes/{name}/documents the same into the
reader's documents), GET /indexes/{name}/context a mined sentence in its article. A search's
answer carries the index version it read in the `X-Perspect-Index-Version` header: a search pins
one version from start to end, and one that starts after an add is published reads the new one.

The page (`/`, its files under `/page/`, shipped in the package: no build step, nothing fetched)
searches through POST /searches, a job it reads the stage of until the answer is there (GET
/searches/{id}) or the reader cancels it (DELETE), and corrects through
/indexes/{name}/corrections, the CLI's `perspect correct`.

No `from __future__ import annotations` here: FastAPI reads each route's request model, made for
this server's limits by `schemas.requests`, from the route's annotations, which must be objects.
"""

import asyncio
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path as FilePath
from typing import Any, Literal

from fastapi import FastAPI, Path, Query
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from perspect import api
from perspect.api.examples import EXAMPLE_CLAIMS
from perspect.core.errors import IndexDamaged, NotInIndex
from perspect.core.index.config import check_name
from perspect.serve import errors, on_ray
from perspect.serve.config import ENV, ServeConfig
from perspect.serve.engines import Engines
from perspect.serve.schemas import INDEX_NAME, requests, responses

DESCRIPTION = """Perspective search: diverse, substantiated perspectives on a claim.

Every error is one line of JSON, `{{"error": "..."}}` (a 500 adds the `id` it was logged under):
400 malformed JSON or a value outside a limit stated here, 404 an unknown index, pool or
retriever, 405 a method a path does not take (with `Allow`), 413 a body over {max_body_bytes:,}
bytes (any route), 422 a field missing, unknown or of the wrong type, 503 the models not loaded
or the index being written past the wait, 504 past the time budget."""
PAGE = FilePath(__file__).with_name("page")  # the page's files, package data
JOB_ID = "^[0-9a-f]{16}$"
VERSION_HEADER = "X-Perspect-Index-Version"
WORKER_HEADER = "X-Perspect-Worker"  # the worker process's pid (several with --workers N)
log = logging.getLogger("perspect.serve")


class NoSuchJob(NotInIndex):
    """An unknown (or expired) search job: 404."""


def create_app(config: ServeConfig) -> FastAPI:
    engines = Engines(config) if config.ray is None else on_ray.RayEngines(config)
    writer = ThreadPoolExecutor(2, "perspect-news")

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        engines.start()
        yield
        engines.close()
        writer.shutdown(wait=True)

    req = requests(config.max_claim_chars, config.max_k, config.max_news_inputs)
    app = FastAPI(
        title="Perspect",
        version="0.1.0",
        description=DESCRIPTION.format(max_body_bytes=config.max_body_bytes),
        lifespan=lifespan,
    )
    errors.install(app)
    app.add_middleware(errors.BodyLimit, limit=config.max_body_bytes)
    app.state.engines = engines

    app.mount("/page", StaticFiles(directory=PAGE), name="page")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        """The page: a claim's answer as two columns, corrections, compare (perspect/serve/page)."""
        return FileResponse(PAGE / "index.html", media_type="text/html")

    @app.get("/examples", responses=responses())
    async def examples() -> dict[str, Any]:
        """The served index and the example claims the page offers."""
        return {"index": config.index, "examples": list(EXAMPLE_CLAIMS)}

    @app.post("/searches", status_code=202, responses=responses(400, 422, 503))
    async def start_search(body: req.job) -> dict[str, Any]:
        """Start a full search as a job (the page's way in): its id at once; GET
        /searches/{id} says its stage until its answer (`perspect.result/1`) or error is there."""
        return engines.start_job(body.claim, body.k, body.fast).to_json()

    def job_of(jid: str):
        job = engines.jobs.get(jid)
        if job is None:
            raise NoSuchJob(f"no search job {jid} (finished ones are kept 5 minutes)")
        return job

    @app.get("/searches/{jid}", responses=responses(400, 404, 422))
    async def search_job(jid: str = Path(pattern=JOB_ID, description="the job's id")):
        """A search job: `state` (queued, running, done, failed, cancelled), the `stage` it is
        at and the `fraction` done; `result` once done, `error` and `status` once failed."""
        return job_of(jid).to_json()

    @app.delete("/searches/{jid}", responses=responses(400, 404, 422))
    async def cancel_search(jid: str = Path(pattern=JOB_ID, description="the job's id")):
        """Cancel a search job: it stops at its next stage (a finished one is left as it is)."""
        job = job_of(jid)
        engines.cancel_job(job)
        return job.to_json()

    @app.get("/indexes/{name}/corrections", responses=responses(400, 404, 422))
    async def corrections(
        name: str = Path(pattern=INDEX_NAME, description="the index", examples=[config.index]),
    ) -> dict[str, Any]:
        """What readers corrected (`perspect corrections --json`), oldest first."""
        check_name(name)

        def look() -> dict[str, Any]:
            with api.Perspect.open(name, home=config.home) as p:
                return {"index": name, "corrections": [c.to_json() for c in p.corrections()]}

        return await asyncio.to_thread(look)

    @app.post("/indexes/{name}/corrections", responses=responses(400, 404, 422))
    async def correct(
        body: req.correction,
        name: str = Path(pattern=INDEX_NAME, description="the index", examples=[config.index]),
    ) -> dict[str, Any]:
        """Put a perspective on a side of a claim (or off-topic), or say two make one point;
        `undo` takes it back (`perspect correct`). Later searches of that claim apply it."""
        check_name(name)
        same = tuple(body.same) if hasattr(body, "same") else None
        perspective, side = getattr(body, "perspective", None), getattr(body, "side", None)

        def write() -> dict[str, Any]:
            with api.Perspect.open(name, home=config.home) as p:
                changed = p.correct(body.claim, perspective, side, same, body.undo)
                return {"index": name, "changed": changed}

        return await asyncio.to_thread(write)

    @app.get("/health", responses=responses())
    async def health() -> dict[str, Any]:
        """The process is up (the models may still be loading)."""
        return {"status": "ok", "pid": os.getpid()}

    @app.get(
        "/ready",
        responses={
            **responses(),
            503: {"description": "still loading, or a model failed to load (its error)"},
        },
    )
    async def ready():
        """200 once the index is open and the models are loaded, else 503."""
        body = {
            "ready": engines.ready,
            "index": config.index,
            "pid": os.getpid(),
            "engines": engines.status(),
        }
        return JSONResponse(body, status_code=200 if engines.ready else 503)

    @app.get("/indexes", responses=responses())
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

    @app.post(
        "/search",
        responses={
            200: {
                "description": "perspect.result/1, or perspect.hits/1 for retrieval only",
                "headers": {
                    VERSION_HEADER: {
                        "description": "the index version the search read",
                        "schema": {"type": "string"},
                    }
                },
            },
            **responses(400, 404, 422, 503, 504),
        },
    )
    async def search(body: req.search) -> dict[str, Any]:
        """The full pipeline (`perspect search --json`), or plain retrieval with `pool` or
        `retriever`."""
        got = await engines.search(body.claim, body.k, body.fast, body.pool, body.retriever)
        headers = {VERSION_HEADER: got.version, WORKER_HEADER: str(os.getpid())}
        return JSONResponse(got.body, headers=headers)

    @app.post("/compare", responses=responses(400, 422, 503, 504))
    async def compare(body: req.compare) -> dict[str, Any]:
        """Article A against article B, point by point (`perspect compare --json`)."""
        a, b = body.a, body.b
        return await engines.compare((a.title, a.text), (b.title, b.text))

    @app.post("/indexes/{name}/news", responses=responses(400, 404, 422, 503))
    async def add_news(
        body: req.news,
        name: str = Path(
            pattern=INDEX_NAME,
            description="the index (any of the home's)",
            examples=[config.index],
        ),
    ) -> dict[str, Any]:
        """Fetch and add news (the report of `perspect news add --json`). Adds to one index
        are serialised by its writer lock: each waits for the one before, none is lost."""
        return await add(name, body.articles, "news", body.leaning)

    @app.post("/indexes/{name}/documents", responses=responses(400, 404, 422, 503))
    async def add_documents(
        body: req.news,
        name: str = Path(
            pattern=INDEX_NAME,
            description="the index (any of the home's)",
            examples=[config.index],
        ),
    ) -> dict[str, Any]:
        """Add your own sources, which a search mines for perspectives (`perspect index add
        --documents`): pages, feeds or article objects, fetched and de-duplicated as news is;
        the report of `perspect news add --json`."""
        return await add(name, body.articles, "documents")

    async def add(
        name: str, articles: list, pool: str, leaning: str | None = None
    ) -> dict[str, Any]:
        check_name(name)
        loop = asyncio.get_running_loop()
        report = await loop.run_in_executor(
            writer,
            lambda: api.add_news(
                name,
                articles,
                home=config.home,
                timeout=config.fetch_timeout_s,
                budget=config.time_budget_s,  # for fetching; the write is not cut short
                wait=config.writer_wait_s,
                pool=pool,
                leaning=leaning,
            ),
        )
        return report.to_json()

    @app.get("/indexes/{name}/context", responses=responses(400, 404, 422))
    async def context(
        name: str = Path(pattern=INDEX_NAME, description="the index", examples=[config.index]),
        sentence: str = Query(
            alias="id",
            min_length=1,
            max_length=1000,
            description="a mined sentence's id (`ARTICLE#POSITION`: a member's `id`)",
        ),
        pool: Literal["documents", "news"] = Query("documents", description="its pool"),
    ) -> dict[str, Any]:
        """A mined sentence in its article: every sentence of the article, in order, and which
        one it is (`perspect.context/1`)."""
        check_name(name)

        def look() -> dict[str, Any]:
            with api.Perspect.open(name, home=config.home) as p:
                return p.context(sentence, pool).to_json()

        return await asyncio.to_thread(look)

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
    if config.ray is not None:  # connected first: no cluster is one line, before any serving
        on_ray.connect(config)
    if config.workers == 1:
        uvicorn.run(create_app(config), **common)
        return
    os.environ[ENV] = config.to_env()
    uvicorn.run("perspect.serve.app:from_env", factory=True, workers=config.workers, **common)
