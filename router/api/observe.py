"""Request ids, request metrics and the debug access log, as one ASGI middleware.

A client's ``X-Request-ID`` is kept when it is 1-128 safe characters, otherwise a new id is
made; either way it comes back in the ``X-Request-ID`` response header, in every log line of
the request and in error bodies. An exception no handler took becomes a JSON 500 with the id.
"""

from __future__ import annotations

import logging
import re
import uuid
from time import perf_counter

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from router.api.errors import error_response
from router.server.logs import REQUEST_ID
from router.server.metrics import Metrics

HEADER = "x-request-id"
_HEADER_BYTES = HEADER.encode()
_SAFE_ID = re.compile(r"[A-Za-z0-9._:/+=@-]{1,128}")

log = logging.getLogger("router.access")


def header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of a request's header ``name`` (lower-case), or None."""
    return next((bytes(value) for key, value in scope.get("headers", ()) if key == name), None)


def request_id(scope: Scope) -> str:
    """The client's request id when it is safe to log and echo, else a new one."""
    given = (header(scope, _HEADER_BYTES) or b"").decode("latin-1")
    return given if _SAFE_ID.fullmatch(given) else uuid.uuid4().hex


class Observe:
    """Gives every HTTP request an id, times it into ``metrics`` and logs it at debug level.

    Args:
        app: the application to wrap.
        metrics: where request durations and unhandled errors are counted.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = request_id(scope)
        token = REQUEST_ID.set(rid)
        status = 500
        started = False

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                status, started = message["status"], True
                MutableHeaders(scope=message).append(HEADER, rid)
            await send(message)

        start = perf_counter()
        try:
            await self.app(scope, receive, send_with_id)
        except Exception as exc:
            log.exception("unhandled error", extra={"method": scope["method"], "path": scope["path"]})
            self.metrics.error("InternalError", 500)
            if started:
                raise
            await error_response("InternalError", type(exc).__name__, 500)(scope, receive, send_with_id)
        finally:
            elapsed = perf_counter() - start
            path = getattr(scope.get("route"), "path", None) or "unmatched"
            self.metrics.request(scope["method"], path, status, elapsed)
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "request",
                    extra={"method": scope["method"], "path": scope["path"], "status": status, "ms": elapsed * 1000},
                )
            REQUEST_ID.reset(token)
