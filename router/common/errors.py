"""The router's error family, rendered by one handler as ``{"error", "detail"}``.

::

    RouterError (500)
    ├── CatalogInvalid (422)      a catalog file or request fails validation
    ├── NotFound (404)
    │   └── NamespaceNotFound     no catalog of that name
    ├── InvalidRequest (422)      a request field is out of range
    ├── Unauthorized (401)        no API key, or an unknown one
    ├── Forbidden (403)           the API key may not use that namespace or session
    └── Unavailable (503)         storage unreachable or the service is not ready
"""

from __future__ import annotations


class RouterError(Exception):
    """Base of every error the router raises on purpose."""

    status_code = 500

    def __init__(self, detail: str, *, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class CatalogInvalid(RouterError):
    """A function definition or catalog document fails validation."""

    status_code = 422


class InvalidRequest(RouterError):
    """A request is well-formed JSON but one of its fields is not acceptable."""

    status_code = 422


class CatalogConflict(RouterError):
    """A catalog the server's catalog directory keeps cannot be changed through the API."""

    status_code = 409


class NotFound(RouterError):
    """The thing asked for does not exist."""

    status_code = 404


class NamespaceNotFound(NotFound):
    """No catalog has that namespace."""


class Unauthorized(RouterError):
    """The request carries no API key, or one that is not configured."""

    status_code = 401


class Forbidden(RouterError):
    """The API key is valid but may not use what the request asks for."""

    status_code = 403


class Unavailable(RouterError):
    """Storage cannot be reached, or the service is not ready yet."""

    status_code = 503
