"""One handler per error family, each answering ``{"error", "detail"}``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from router.api.schemas import ErrorOut
from router.common.errors import RouterError, Unauthorized
from router.server.logs import REQUEST_ID
from router.storage.base import StorageUnavailable

log = logging.getLogger(__name__)


def error_response(error: str, detail: str, status: int, *, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An error answer: ``{"error": <kind>, "detail": <what and where>, "request_id": ...}``."""
    body = ErrorOut(error=error, detail=detail, request_id=REQUEST_ID.get())
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def challenge(*, invalid: bool) -> dict[str, str]:
    """The ``WWW-Authenticate`` header of a 401 (RFC 6750): which scheme, and whether the token was wrong."""
    return {"WWW-Authenticate": 'Bearer realm="tool-router"' + (', error="invalid_token"' if invalid else "")}


def _body(
    request: Request, error: str, detail: str, status: int, *, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    metrics = getattr(request.app.state, "metrics", None)
    if metrics is not None:
        metrics.error(error, status)
    return error_response(error, detail, status, headers=headers)


def _location(loc: tuple[Any, ...]) -> str:
    # Only the first part says where the field is: a body field may itself be named "query".
    parts = [str(p) for p in (loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc)]
    text = ""
    for part in parts:
        text += f"[{part}]" if part.isdigit() else (f".{part}" if text else part)
    return text or "body"


def _problem(error: Mapping[str, Any]) -> str:
    if error["type"] == "json_invalid":  # its location is a character offset, not a field
        reason = error.get("ctx", {}).get("error", "")
        return f"body: not valid JSON at character {error['loc'][-1]}" + (f" ({reason})" if reason else "")
    return f"{_location(tuple(error['loc']))}: {error['msg']}"


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""

    @app.exception_handler(RouterError)
    async def router_error(request: Request, exc: RouterError) -> JSONResponse:
        headers = challenge(invalid=False) if isinstance(exc, Unauthorized) else None
        return _body(request, type(exc).__name__, exc.detail, exc.status_code, headers=headers)

    @app.exception_handler(StorageUnavailable)
    async def unavailable(request: Request, exc: StorageUnavailable) -> JSONResponse:
        log.warning("storage unavailable", extra={"detail": str(exc)})
        return _body(request, "Unavailable", str(exc), 503)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        kind = _KINDS.get(exc.status_code, "HTTPError")
        return _body(request, kind, str(exc.detail), exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        is_json = kind == "application/json" or kind.endswith("+json")
        if not is_json and any(tuple(e["loc"]) == ("body",) for e in exc.errors()):
            # The body was not read as JSON at all (curl -d sends a form's content type).
            detail = f"body: send JSON with content-type: application/json (got {kind or 'no content type'})"
            return _body(request, "ValidationError", detail, 422)
        problems = [_problem(e) for e in exc.errors()]
        return _body(request, "ValidationError", "; ".join(problems), 422)


_KINDS = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed", 413: "PayloadTooLarge"}

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "The body cannot be parsed"},
    401: {"model": ErrorOut, "description": "API keys are configured and none, or an unknown one, was sent"},
    403: {"model": ErrorOut, "description": "The API key may not use this namespace or session"},
    404: {"model": ErrorOut, "description": "Unknown namespace"},
    409: {"model": ErrorOut, "description": "The catalog is kept from this server's catalog directory"},
    413: {"model": ErrorOut, "description": "The body exceeds its size limit"},
    422: {"model": ErrorOut, "description": "Invalid request; the detail names the field"},
    503: {"model": ErrorOut, "description": "Storage or the embedding service unavailable, or the service is starting"},
}


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The documented error responses of a route."""
    return {code: ERRORS[code] for code in codes}
