"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from router.api.deps import RuntimeDep
from router.schemas import HealthOut

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
