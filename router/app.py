"""The FastAPI application: ``create_app``, and the runtime and settings it is built from.

``uvicorn --factory router.app:create_app`` serves it; ``create_app(runtime=Runtime(Settings(),
extractor=...))`` plugs in parts of one's own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from router.api import catalogs, console, errors, examples, misses, route, status, tool_search, users
from router.api.auth import AuthMiddleware
from router.api.limits import BodyLimitMiddleware
from router.api.observe import Observe
from router.common import version
from router.server.runtime import Runtime
from router.server.settings import Settings
from router.server.traffic import Traffic

__all__ = ["Runtime", "Settings", "create_app"]

DESCRIPTION = (
    "The [console](/console) shows the catalogs, tries a turn with the score of each function, "
    "looks up sessions and memories, and tells the router's health."
)


def create_app(settings: Settings | None = None, *, runtime: Runtime | None = None) -> FastAPI:
    """Build the app; its lifespan starts the runtime (storage, model, worker) and stops it.

    Storage and the model open before the server listens, so a locked data directory or
    an unknown model stops start-up with its reason; the first catalog sync and any
    generation rebuild run in the background, and ``/readyz`` tells when they are done.
    """
    runtime = runtime or Runtime(settings or Settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.runtime = runtime
        try:
            await runtime.start()
            yield
        finally:
            await runtime.stop()

    app = FastAPIOffline(
        static_url="/docs/static",
        title="Tool router",
        version=version(),
        summary="The few functions that matter for each turn of an agent's conversation.",
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.metrics = runtime.metrics
    app.state.traffic = Traffic(runtime.metrics)
    errors.install(app)
    # Keys are checked before the body is read; outermost of all, request ids and metrics cover every answer.
    app.state.api_keys, app.state.limits = runtime.settings.auth.keys, runtime.settings.limits
    app.add_middleware(BodyLimitMiddleware, limits=runtime.settings.limits)
    if app.state.api_keys is not None:
        app.add_middleware(AuthMiddleware, keys=app.state.api_keys)
    app.add_middleware(Observe, metrics=runtime.metrics)
    app.include_router(status.health_router)
    app.include_router(route.router)
    app.include_router(users.sessions_router)
    app.include_router(users.router)
    app.include_router(catalogs.router)
    app.include_router(tool_search.router)
    app.include_router(catalogs.tools_router)
    app.include_router(examples.router)
    app.include_router(misses.router)
    app.include_router(status.router)
    app.include_router(console.router)
    return app
