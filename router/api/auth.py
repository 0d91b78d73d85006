"""API keys on ``/v1`` and the dependencies every route is given: the key's access and the runtime's parts.

With ``ROUTER_API_KEYS`` set, every request under ``/v1`` needs ``Authorization: Bearer <key>``
(401 otherwise, before the body is read); ``/healthz``, ``/readyz`` and the API documentation
stay open. A key limited to namespaces gets 403 for any other namespace: in a route, a catalog
path, or a session. A session belongs to the namespaces its messages were stored with, so a
limited key reaches a session only when every stored message of it carries one of its namespaces.

Routes receive the runtime's parts as plain typed parameters (``RuntimeDep``, ``ServiceDep``...).
The providers are ``async``: FastAPI runs a plain ``def`` dependency in a worker thread, and a
thread hop per attribute read would cost a route more than its searches.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.types import ASGIApp, Receive, Scope, Send

from router.api.errors import challenge, error_response
from router.api.keys import FULL, Access, ApiKeys
from router.api.observe import header
from router.common.errors import Forbidden, Unauthorized
from router.retrieval.catalogs import Catalogs
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime
from sync.service import CatalogService

SCOPE_KEY = "router.access"
PROTECTED = "/v1"

bearer = HTTPBearer(
    scheme_name="apiKey",
    description="A key of ROUTER_API_KEYS, required on /v1 when keys are configured",
    auto_error=False,
)


class AuthMiddleware:
    """Answers 401 to a ``/v1`` request without a configured key; records what a valid key may use."""

    def __init__(self, app: ASGIApp, keys: ApiKeys) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not (path == PROTECTED or path.startswith(PROTECTED + "/")):
            await self.app(scope, receive, send)
            return
        scheme, _, token = (header(scope, b"authorization") or b"").partition(b" ")
        token = token.strip() if scheme.lower() == b"bearer" else b""
        access = self.keys.match(token) if token else None
        if access is None:
            detail = "the API key is not valid" if token else "an API key is required: send Authorization: Bearer <key>"
            await error_response("Unauthorized", detail, 401, headers=challenge(invalid=bool(token)))(
                scope, receive, send
            )
            return
        scope[SCOPE_KEY] = access
        await self.app(scope, receive, send)


async def get_access(
    request: Request, _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(bearer)]
) -> Access:
    """What the request's API key may use (everything when no keys are configured).

    The key itself was checked by ``AuthMiddleware``; the ``Security`` parameter declares the
    scheme in the OpenAPI document.
    """
    access: Access | None = request.scope.get(SCOPE_KEY)
    if access is not None:
        return access
    if request.app.state.api_keys is None:
        return FULL
    raise Unauthorized("an API key is required: send Authorization: Bearer <key>")


AccessDep = Annotated[Access, Depends(get_access)]


async def check_session(access: Access, turns: TurnRouter, session_id: str) -> None:
    """Raise ``Forbidden`` when a limited key may not reach the session (it holds other namespaces' messages)."""
    if access.namespaces is None:
        return
    store = await turns.history()
    if await asyncio.to_thread(store.outside, session_id, access.namespaces):
        raise Forbidden(f"session {session_id!r} holds messages of namespaces this API key may not use")


async def get_runtime(request: Request) -> Runtime:
    """The runtime opened by the app's lifespan."""
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def get_service(runtime: RuntimeDep) -> CatalogService:
    """The catalog writer (503 while the runtime is starting)."""
    return runtime.service


async def get_catalogs(runtime: RuntimeDep) -> Catalogs:
    """The catalogs as routes read them (503 while the runtime is starting)."""
    return runtime.catalogs


async def get_turn_router(runtime: RuntimeDep) -> TurnRouter:
    """The turn router (503 while the runtime is starting)."""
    return runtime.turns


ServiceDep = Annotated[CatalogService, Depends(get_service)]
CatalogsDep = Annotated[Catalogs, Depends(get_catalogs)]
TurnRouterDep = Annotated[TurnRouter, Depends(get_turn_router)]
