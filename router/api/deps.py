"""Dependency aliases: routes receive the runtime's parts as plain typed parameters.

The providers are ``async``: FastAPI runs a plain ``def`` dependency in a worker thread,
and a thread hop per attribute read would cost a route more than its searches.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from router.retrieval.catalogs import Catalogs
from router.routing.turns import TurnRouter
from router.server.runtime import Runtime
from sync.service import CatalogService


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def get_runtime(request: Request) -> Runtime:
    """The runtime opened by the app's lifespan."""
    return _runtime(request)


async def get_service(request: Request) -> CatalogService:
    """The catalog writer (503 while the runtime is starting)."""
    return _runtime(request).service


async def get_catalogs(request: Request) -> Catalogs:
    """The catalogs as routes read them (503 while the runtime is starting)."""
    return _runtime(request).catalogs


async def get_turn_router(request: Request) -> TurnRouter:
    """The turn router (503 while the runtime is starting)."""
    return _runtime(request).turns


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
ServiceDep = Annotated[CatalogService, Depends(get_service)]
CatalogsDep = Annotated[Catalogs, Depends(get_catalogs)]
TurnRouterDep = Annotated[TurnRouter, Depends(get_turn_router)]
