"""Liveness, readiness and metrics."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from router.api.deps import RuntimeDep
from router.api.schemas import HealthOut
from router.server.metrics import CONTENT_TYPE

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> HealthOut:
    """The process is alive."""
    return HealthOut(status="ok")


@router.get("/readyz", responses={503: {"model": HealthOut, "description": "Not ready yet"}})
async def readyz(runtime: RuntimeDep) -> JSONResponse:
    """Model loaded, storage open, first catalog sync done."""
    checks = runtime.readiness()
    ready = all(checks.values())
    body = HealthOut(status="ready" if ready else "starting", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(runtime: RuntimeDep) -> Response:
    """Prometheus metrics, in the text exposition format."""
    # Off the event loop: the catalog sizes are read from storage.
    body = await asyncio.to_thread(runtime.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)
