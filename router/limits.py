"""Request limits: body size (counted as it streams in), messages, functions, string length, nesting, NUL.

The body size is enforced by an ASGI middleware before anything parses the body, whether or
not the client sent a ``Content-Length``. An oversized body is read and discarded (up to
``drain_bytes``) before the 413 answer goes out on a closing connection: a client still
uploading when the server answers and closes gets a connection reset instead of the answer
(urllib, httpx and requests all do), so the server lets the upload finish first.

What a parsed body may hold is checked by ``check_document``, run on every JSON body before
the route sees it; each error names the field and the setting that bounds it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from router.errors import InvalidRequest

MIB = 1024 * 1024
# Bodies from this size are checked off the event loop: a 10,000-function catalog takes a tenth of a second.
LARGE_BODY = MIB
CATALOG_PREFIX = "/v1/catalogs/"
# Bodies of these top-level list fields are counted.
CLOSE = {"connection": "close"}
COUNTED = {"messages": ("messages", "per request"), "functions": ("functions", "per catalog")}


class LimitSettings(BaseSettings):
    """How large a request may be."""

    model_config = SettingsConfigDict(env_prefix="ROUTER_LIMIT_", extra="forbid")

    body_bytes: int = Field(MIB, ge=1024, description="largest request body, catalog PUTs aside")
    catalog_bytes: int = Field(32 * MIB, ge=1024, description="largest PUT /v1/catalogs/{namespace} body")
    messages: int = Field(1000, ge=1, description="messages in one request")
    functions: int = Field(10_000, ge=1, description="functions in one catalog")
    text_chars: int = Field(100_000, ge=1, description="characters in any one string of a request body")
    depth: int = Field(64, ge=4, le=512, description="how deeply objects and lists of a request body may nest")
    drain_bytes: int = Field(
        64 * MIB,
        ge=0,
        description="most bytes of an oversized body read and discarded so the client can read the 413 answer",
    )


class BodyTooLarge(StarletteHTTPException):
    """The body grew past its limit while it was being read."""

    def __init__(self, detail: str) -> None:
        super().__init__(status_code=413, detail=detail)


def body_limit(scope: Scope, limits: LimitSettings) -> tuple[int, str]:
    """The byte limit of a request's body, and the setting that holds it."""
    if scope.get("method") == "PUT" and str(scope.get("path", "")).startswith(CATALOG_PREFIX):
        return limits.catalog_bytes, "ROUTER_LIMIT_CATALOG_BYTES"
    return limits.body_bytes, "ROUTER_LIMIT_BODY_BYTES"


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
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
        from router.api.errors import error_response

        limit, setting = body_limit(scope, self.limits)
        declared = _declared_length(scope)
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


async def drain(receive: Receive, *, budget: int) -> int:
    """Read and discard the rest of a request body, at most ``budget`` bytes; the bytes read.

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
    return discarded


def check_document(document: Any, limits: LimitSettings, *, at: tuple[str | int, ...] = ()) -> None:
    """Reject a parsed JSON body that holds too many items, a too long or NUL-bearing string, or nests too deep.

    ``at``: where ``document`` lies in the body (``("functions", 3)``), for a part of a body
    checked on its own: errors name the field from the top, and depth counts from there.

    Raises:
        InvalidRequest: naming the first offending field, in document order.
    """
    # Iterative, so a deep document cannot exhaust the interpreter's stack; paths are linked
    # (parent, key) pairs, rendered only for an error.
    trail: tuple[Any, str | int] | None = None
    for key in at:
        trail = (trail, key)
    if not at:
        _check_counts(document, limits)
    if isinstance(document, str):
        _check_string(document, trail, limits)
    stack: list[tuple[Any, tuple[Any, str | int] | None, int]] = [(document, trail, len(at))]
    while stack:
        node, trail, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth >= limits.depth:
            where = _path(trail)
            raise InvalidRequest(f"{where}: nested deeper than {limits.depth} levels (ROUTER_LIMIT_DEPTH)", field=where)
        children: list[tuple[Any, tuple[Any, str | int] | None, int]] = []
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(key, str) and ("\x00" in key or len(key) > limits.text_chars):
                _check_string(key, trail, limits, name=True)
            if isinstance(value, str):
                if "\x00" in value or len(value) > limits.text_chars:
                    _check_string(value, (trail, key), limits)
            elif isinstance(value, dict | list):
                children.append((value, (trail, key), depth + 1))
        stack.extend(reversed(children))


def _check_counts(document: Any, limits: LimitSettings) -> None:
    if isinstance(document, dict):
        for name in COUNTED:
            items = document.get(name)
            if isinstance(items, list):
                check_count(name, len(items), limits)


def check_count(name: str, count: int, limits: LimitSettings) -> None:
    """Reject ``count`` items in the top-level list ``name`` (one of ``COUNTED``) when over its limit."""
    noun, scope = COUNTED[name]
    limit = getattr(limits, name)
    if count > limit:
        detail = f"{name}: {count} {noun}; at most {limit} {scope} (ROUTER_LIMIT_{name.upper()})"
        raise InvalidRequest(detail, field=name)


def _check_string(text: str, trail: tuple[Any, str | int] | None, limits: LimitSettings, *, name: bool = False) -> None:
    where = _path(trail)
    what = "a field name" if name else "the text"
    if "\x00" in text:
        raise InvalidRequest(f"{where}: {what} contains a NUL character (\\u0000)", field=where)
    if len(text) > limits.text_chars:
        raise InvalidRequest(
            f"{where}: {what} has {len(text)} characters; at most {limits.text_chars} (ROUTER_LIMIT_TEXT_CHARS)",
            field=where,
        )


def _path(trail: tuple[Any, str | int] | None) -> str:
    keys: list[str | int] = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text or "body"


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
