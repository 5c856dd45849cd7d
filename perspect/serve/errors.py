"""Every error a client sees is one line of JSON, `{"error": "..."}`, with a fitting status:
400 bad JSON or a bad value, 404 an unknown index, pool, retriever or route, 405 a method the path
does not take (with `Allow`), 413 a body over the limit, 422 a field missing, unknown or of the
wrong type, 503 not ready or the index busy, 504 past the time budget; a failure inside is
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
    PerspectError,
)
from perspect.serve.engines import status_of
from perspect.serve.schemas import VALUE_ERRORS, bad_value

log = logging.getLogger("perspect.serve")


def error(status: int, message: str, **extra) -> JSONResponse:
    return JSONResponse({"error": " ".join(message.split()), **extra}, status_code=status)


# Past the limit, the body is still read (and dropped) up to this many bytes before the 413:
# a client that sends its whole body before it reads the answer (urllib, http.client, requests,
# httpx) got a connection reset, not the 413, when the server answered and closed while it was
# still sending. Past this bound the connection is closed after the 413.
DRAIN_BYTES = 64 * 1024 * 1024


class BodyLimit:
    """ASGI middleware: the body is read here first, and one declared or streamed past `limit`
    bytes is refused with 413 before any route sees it (a route's parser would turn an error
    raised mid-body into a vague 400). What is left of a refused body is read and dropped (up to
    DRAIN_BYTES) before the answer, whatever the client's speed, so that every common client
    reads the 413; a client that asked to hear first (`Expect: 100-continue`, as curl does) is
    answered at once and sends nothing."""

    def __init__(self, app, limit: int, drain: int = DRAIN_BYTES):
        self.app, self.limit, self.drain = app, limit, drain

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        declared = int(length) if length is not None and length.isdigit() else None
        if declared is not None and declared > self.limit:
            waits = headers.get(b"expect", b"").lower() == b"100-continue"
            if waits or declared > self.drain:
                return await self._refuse(scope, receive, send)
            return await self._drain_and_refuse(scope, receive, send, 0)
        chunks, seen = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.limit:
                if not message.get("more_body", False):
                    return await self._refuse(scope, receive, send)
                return await self._drain_and_refuse(scope, receive, send, seen)
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

    async def _drain_and_refuse(self, scope, receive, send, seen: int) -> None:
        while seen <= self.drain:
            message = await receive()
            if message["type"] != "http.request":  # the client left: nobody to answer
                return
            seen += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        await self._refuse(scope, receive, send)

    async def _refuse(self, scope, receive, send) -> None:
        too_big = error(413, f"request body over the limit of {self.limit:,} bytes")
        too_big.headers["Connection"] = "close"
        await too_big(scope, receive, send)


def _validation_message(exc: RequestValidationError) -> tuple[int, str]:
    """400 for malformed JSON or a value outside a stated limit (schemas.VALUE_ERRORS), 422 when
    some field is missing, unknown or of the wrong type."""
    errs = list(exc.errors())
    first = errs[0] if errs else {}
    if first.get("type") == "json_invalid":
        return 400, f"malformed JSON: {first.get('ctx', {}).get('error', 'cannot parse')}"
    more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
    typed = [e for e in errs if e.get("type") not in VALUE_ERRORS]

    def where(e) -> str:
        return ".".join(str(x) for x in e.get("loc", ()) if x not in ("body", "path")) or "body"

    if errs and not typed:
        return 400, bad_value(where(first), first) + more
    first = typed[0] if typed else first
    return 422, f"{where(first)}: {first.get('msg', 'invalid')}{more}"


def _allowed(request: Request) -> list[str]:
    """The methods of every route whose path matches the request's: a path served by two routes
    (GET and POST of /indexes/{name}/corrections) answers a 405 naming both."""
    from starlette.routing import Match

    methods: set[str] = set()
    for route in request.app.router.routes:
        got, _ = route.matches({**request.scope, "method": "\x00"})
        if got != Match.NONE and getattr(route, "methods", None):
            methods |= set(route.methods)
    return sorted(methods)


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        return error(*_validation_message(exc))

    @app.exception_handler(HTTPException)
    async def http(request: Request, exc: HTTPException):
        msg = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 404 and msg == "Not Found":
            msg = f"no route {request.method} {request.url.path}"
        headers = dict(exc.headers or {})  # a 405's Allow: the methods the path takes
        if exc.status_code == 405:
            allowed = _allowed(request)  # every route of the path, not only the first one
            if allowed:
                headers["Allow"] = ", ".join(allowed)
            msg = f"{request.method} is not allowed on {request.url.path}"
            if headers.get("Allow"):
                msg += f" (allowed: {headers['Allow']})"
        answer = error(exc.status_code, msg)
        answer.headers.update(headers)
        return answer

    @app.exception_handler(PerspectError)
    async def perspect(request: Request, exc: PerspectError):
        status = status_of(exc)
        text = exc.message + (f" ({exc.hint})" if exc.hint and status != 404 else "")
        return error(status, text)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception):
        eid = uuid.uuid4().hex[:12]
        log.error("error %s on %s %s", eid, request.method, request.url.path, exc_info=exc)
        return error(500, f"internal error {eid} (logged by the server)", id=eid)
