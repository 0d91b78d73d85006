"""What the client raises, mapped from the sidecar's ``{"error", "detail"}`` bodies.

::

    RouterClientError              anything the client raises on purpose
    ├── TransportError             no answer: connection refused, reset or timed out (after retries)
    └── APIError                   an error answer: .status_code, .error (its kind), .detail
        ├── AuthenticationError    401: the sidecar requires an API key, and none or an unknown one was sent
        ├── PermissionDeniedError  403: the API key may not use that namespace or session
        ├── NotFoundError          404: no catalog of that namespace
        ├── ValidationError        422: a field is missing or out of range; .detail names it
        └── UnavailableError       503: storage unreachable or the service starting (after retries)

Other statuses (409, 413, 500, a proxy's 502) raise ``APIError`` itself. A successful answer
the client cannot read raises ``APIError`` with ``error == "InvalidResponse"``.
"""

from __future__ import annotations

from typing import Any

import httpx


class RouterClientError(Exception):
    """Base of every error the router client raises."""


class TransportError(RouterClientError):
    """The sidecar could not be reached, or did not answer in time."""


class APIError(RouterClientError):
    """The sidecar answered with an error.

    Attributes:
        status_code: the HTTP status.
        error: the error's kind, as the sidecar names it (``NamespaceNotFound``, ...).
        detail: what went wrong and where.
        request_id: the request's id in the sidecar's logs (its ``X-Request-ID``), when it gave one.
    """

    def __init__(self, status_code: int, error: str, detail: str, *, request_id: str | None = None) -> None:
        super().__init__(f"{status_code} {error}: {detail}")
        self.status_code = status_code
        self.error = error
        self.detail = detail
        self.request_id = request_id


class AuthenticationError(APIError):
    """401: API keys are required and none, or one that is not configured, was sent."""


class PermissionDeniedError(APIError):
    """403: the API key is valid but may not use that namespace or session."""


class NotFoundError(APIError):
    """404: the namespace (or path) does not exist."""


class ValidationError(APIError):
    """422: the request was rejected; ``detail`` names the field."""


class UnavailableError(APIError):
    """503: storage is unreachable or the service is still starting."""


_BY_STATUS: dict[int, type[APIError]] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    422: ValidationError,
    503: UnavailableError,
}


def error_from_response(response: httpx.Response) -> APIError:
    """The error an unsuccessful response stands for."""
    status = response.status_code
    error, detail = response.reason_phrase or "HTTPError", response.text
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        if isinstance(body.get("error"), str):
            error = body["error"]
        if body.get("detail") is not None:
            detail = body["detail"] if isinstance(body["detail"], str) else str(body["detail"])
    kind = _BY_STATUS.get(status, APIError)
    return kind(status, error.replace(" ", ""), detail, request_id=response.headers.get("x-request-id"))
