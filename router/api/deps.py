"""Dependency aliases: routes receive the runtime's parts as plain typed parameters.

The providers are ``async``: FastAPI runs a plain ``def`` dependency in a worker thread,
and a thread hop per attribute read would cost a route more than its searches.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from router.routing import TurnRouter
from router.runtime import Runtime
from sync.service import CatalogService


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def get_runtime(request: Request) -> Runtime:
    """The runtime opened by the app's lifespan."""
    return _runtime(request)


async def get_service(request: Request) -> CatalogService:
    """The catalog service (503 while the runtime is starting)."""
    return _runtime(request).service


async def get_turn_router(request: Request) -> TurnRouter:
    """The turn router (503 while the runtime is starting)."""
    return _runtime(request).turns


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]
ServiceDep = Annotated[CatalogService, Depends(get_service)]
TurnRouterDep = Annotated[TurnRouter, Depends(get_turn_router)]
