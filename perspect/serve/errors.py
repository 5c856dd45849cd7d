"""Every error a client sees is one line of JSON, `{"error": "..."}`, with a fitting status:
400 bad JSON or a bad value, 404 an unknown index or route, 413 a body over the limit, 422 a field
of the wrong type, 503 not ready or the index busy, 504 past the time budget; a failure inside is
a 500 whose `id` is logged with its traceback (and nothing is half-written: every index write
is a new copy-on-write version, published only when complete)."""

from __future__ import annotations

import logging
import uuid

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from perspect.core.errors import (
    Cancelled,
    IndexBusy,
    IndexNotFound,
    ModelError,
    PerspectError,
)
from perspect.serve.engines import NotReady, TimedOut

log = logging.getLogger("perspect.serve")


def error(status: int, message: str, **extra) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split()), **extra}, status_code=status)


class BodyLimit:
    """ASGI middleware: the body is read here first, and one declared or streamed past `limit`
    bytes is refused with 413 before any route sees it (a route's parser would turn an error
    raised mid-body into a vague 400)."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_big = error(413, f"request body over the limit of {self.limit:,} bytes")
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await too_big(scope, receive, send)
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                return await too_big(scope, receive, send)
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _validation_message(exc: RequestValidationError) -> tuple[int, str]:
    errs = exc.errors()
    first = errs[0] if errs else {}
    if first.get("type") == "json_invalid":
        return 400, f"malformed JSON: {first.get('ctx', {}).get('error', 'cannot parse')}"
    where = ".".join(str(x) for x in first.get("loc", ()) if x != "body") or "body"
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    return 422, f"{where}: {first.get('msg', 'invalid')}{more}"


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        return error(*_validation_message(exc))

    @app.exception_handler(HTTPException)
    async def http(request: Request, exc: HTTPException):
        msg = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 404 and msg == "Not Found":
            msg = f"no route {request.method} {request.url.path}"
        return error(exc.status_code, msg)

    @app.exception_handler(PerspectError)
    async def perspect(request: Request, exc: PerspectError):
        status = 400
        if isinstance(exc, IndexNotFound):
            status = 404
        elif isinstance(exc, IndexBusy | NotReady | ModelError):
            status = 503
        elif isinstance(exc, TimedOut | Cancelled):
            status = 504
        text = exc.message + (f" ({exc.hint})" if exc.hint and status != 404 else "")
        return error(status, text)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception):
        eid = uuid.uuid4().hex[:12]
        log.error("error %s on %s %s", eid, request.method, request.url.path, exc_info=exc)
        return error(500, f"internal error {eid} (logged by the server)", id=eid)
