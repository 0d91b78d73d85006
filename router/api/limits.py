"""Request body limits over HTTP: the size counted as a body streams in, and its content checked.

The body size is enforced by an ASGI middleware before anything parses the body, whether or
not the client sent a ``Content-Length``. An oversized body is read and discarded (up to
``drain_bytes``) before the 413 answer goes out on a closing connection: a client still
uploading when the server answers and closes gets a connection reset instead of the answer
(urllib, httpx and requests all do), so the server lets the upload finish first. A path whose
escapes are not UTF-8 is refused there too, before any route reads it.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import unquote_to_bytes

import orjson
from fastapi import APIRouter, Depends, Request, Response
from fastapi.params import Depends as Dependency
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from router.api.errors import error_response
from router.api.observe import header
from router.catalog.limits import MIB, LimitSettings, check_document

# Bodies from this size are checked off the event loop: a 10,000-function catalog takes a tenth of a second.
LARGE_BODY = MIB
CATALOG_PREFIX = "/v1/catalogs/"
CLOSE = {"connection": "close"}


class BodyTooLarge(StarletteHTTPException):
    """The body grew past its limit while it was being read."""

    def __init__(self, detail: str) -> None:
        super().__init__(status_code=413, detail=detail)


def body_limit(scope: Scope, limits: LimitSettings) -> tuple[int, str]:
    """The byte limit of a request's body, and the setting that holds it."""
    if scope.get("method") == "PUT" and str(scope.get("path", "")).startswith(CATALOG_PREFIX):
        return limits.catalog_bytes, "ROUTER_LIMIT_CATALOG_BYTES"
    return limits.body_bytes, "ROUTER_LIMIT_BODY_BYTES"


def _path_problem(scope: Scope) -> str | None:
    """Why a path's escapes name no id (None when they do).

    Decoded, "x%FEy" and "x%FFy" would name one id, and "travel%2Fexamples" another route: routes
    match the decoded path, so ``DELETE /v1/catalogs/travel%2Fexamples`` deleted travel's usage examples.
    """
    raw = (scope.get("raw_path") or b"").split(b"?", 1)[0]
    if b"%2f" in raw.lower():
        return "path: a namespace, session, user or id holds '/' (%2F), which none may"
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"path: its escapes are not UTF-8 (byte {bad.start} once decoded); escape each id's UTF-8 bytes"
    return None


class BodyLimitMiddleware:
    """Answers 413 as soon as a body is known to exceed its limit: by its length, or as its bytes arrive."""

    def __init__(self, app: ASGIApp, limits: LimitSettings) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if problem := _path_problem(scope):
            await drain(receive, budget=self.limits.drain_bytes)
            await error_response("InvalidRequest", problem, 422)(scope, receive, send)
            return
        limit, setting = body_limit(scope, self.limits)
        try:
            declared: int | None = int(header(scope, b"content-length") or b"")
        except ValueError:
            declared = None
        if declared is not None and declared > limit:
            detail = f"request body: {declared} bytes; at most {limit} ({setting})"
            await drain(receive, budget=self.limits.drain_bytes)
            await error_response("PayloadTooLarge", detail, 413, headers=CLOSE)(scope, receive, send)
            return
        received = 0
        started = oversized = False

        async def counted() -> Message:
            nonlocal received, oversized
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    oversized = True
                    if message.get("more_body", False):
                        await drain(receive, budget=self.limits.drain_bytes)
                    raise BodyTooLarge(f"request body: more than {limit} bytes ({setting})")
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if oversized:  # the rest of an oversized body may be unread: this connection ends here
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except BodyTooLarge as exc:
            # The app's own handler renders it when the body is read by a route; this covers the rest.
            if started:
                raise
            await error_response("PayloadTooLarge", str(exc.detail), 413, headers=CLOSE)(scope, receive, send)


async def drain(receive: Receive, *, budget: int) -> None:
    """Read and discard the rest of a request body, at most ``budget`` bytes.

    Past the budget the client may still be sending: the connection closes under it then, a
    bounded cost for the server either way.
    """
    discarded = 0
    while discarded <= budget:
        message = await receive()
        if message["type"] != "http.request":
            break
        discarded += len(message.get("body", b""))
        if not message.get("more_body", False):
            break


class JsonRequest(Request):
    """A request whose JSON body is decoded by orjson: strict JSON, large bodies off the event loop.

    The standard decoder takes ``NaN``, ``Infinity`` and lone surrogates (``"\\ud800"``), which
    no JSON document holds and which storage and the tokenizer then fail on; orjson refuses
    them, so they get the same 422 as any other malformed body. A catalog of 10,000 functions
    is several MB of JSON: decoded on the loop, it would stall every route meanwhile.
    """

    async def json(self) -> Any:
        """The decoded body (decoded once)."""
        if not hasattr(self, "_decoded"):
            body = await self.body()
            self._decoded = _decode(body) if len(body) < LARGE_BODY else await asyncio.to_thread(_decode, body)
        return self._decoded


def _decode(body: bytes) -> Any:
    # Decoding 10,000 functions makes 300,000 containers, none in a cycle: the cycle collector's
    # full passes over them (and all else alive) took 0.1 s of a 0.3 s one-change PUT.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        _not_utf8(body, exc)
        raise
    finally:
        if enabled:
            gc.enable()


def _not_utf8(body: bytes, exc: orjson.JSONDecodeError) -> None:
    """Raise where a body stops being UTF-8: orjson says "surrogates not allowed" at character 0 of any."""
    if not exc.msg.startswith("str is not valid UTF-8"):
        return
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as bad:
        read = body[: bad.start].decode("utf-8")
        raise orjson.JSONDecodeError(
            f"byte {bad.start}, {body[bad.start]:#04x}, is not UTF-8", read, len(read)
        ) from None


class JsonRoute(APIRoute):
    """A route whose handler sees a ``JsonRequest``: every API router that takes a JSON body uses it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The default handler, given a ``JsonRequest`` over the same connection."""
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(JsonRequest(request.scope, request.receive))

        return handle


async def check_body(request: Request) -> None:
    """Dependency: apply ``check_document`` to the request's JSON body, if it has one."""
    body = await request.body()
    if request.method not in ("POST", "PUT", "PATCH") or not body:
        return
    try:
        document = await request.json()  # parsed once: the route reads the same cached value
    except (ValueError, RecursionError):
        return  # not JSON: the route's own validation says so
    limits = request.app.state.limits
    if len(body) < LARGE_BODY:
        check_document(document, limits)
    else:
        await asyncio.to_thread(check_document, document, limits)


def body_router(prefix: str, tags: list[str], *dependencies: Dependency) -> APIRouter:
    """A router of routes that take a JSON body: decoded strictly (``JsonRoute``) and checked (``check_body``)."""
    checks = [*dependencies, Depends(check_body)]
    return APIRouter(prefix=prefix, tags=list(tags), dependencies=checks, route_class=JsonRoute)
