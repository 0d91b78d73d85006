"""The router's health: ``/healthz``, ``/readyz``, ``/metrics`` and ``GET /v1/status`` (the console's data).

The status is what the router knows, in one answer: catalogs with their last sync and any
embedding under way, the active generation, readiness, storage, the embedding backend and the
route traffic of this process. It answers even when storage is down or the service is
starting: each part says what it could not read.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from router.api.auth import AccessDep, RuntimeDep, get_access
from router.api.errors import responses
from router.api.keys import Access
from router.api.schemas import HealthOut
from router.catalog.records import CatalogRecord
from router.embedding import is_remote
from router.server.metrics import CONTENT_TYPE
from router.server.traffic import Traffic
from router.storage.base import StorageUnavailable
from sync.reconcile import SyncProgress, SyncResult
from sync.service import CatalogService

log = logging.getLogger(__name__)
_FAILED = ("failed", "rejected")
router = APIRouter(prefix="/v1", tags=["status"], dependencies=[Depends(get_access)])
health_router = APIRouter(tags=["health"])


@health_router.get("/healthz")
async def healthz() -> HealthOut:
    """The process is alive."""
    return HealthOut(status="ok")


@health_router.get(
    "/readyz",
    responses={503: {"model": HealthOut, "description": "Not ready: starting, or an embedding service failing"}},
)
async def readyz(runtime: RuntimeDep) -> JSONResponse:
    """Model loaded, storage open, first catalog sync done, and an embedding service answering (when one is set).

    Not ready, it says ``starting`` until the process has started, and ``unavailable`` after (an
    embedding service failing): an operator tells a slow start from an outage.
    """
    await runtime.check_embedding()
    checks = runtime.readiness()
    ready = runtime.ready(checks)
    started = all(held for name, held in checks.items() if name != "embedding")
    body = HealthOut(status="ready" if ready else "unavailable" if started else "starting", checks=checks)
    return JSONResponse(body.model_dump(), status_code=200 if ready else 503)


@health_router.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}})
async def metrics(runtime: RuntimeDep) -> Response:
    """Prometheus metrics, in the text exposition format."""
    # Off the event loop: the catalog sizes are read from storage.
    body = await asyncio.to_thread(runtime.metrics.render)
    return Response(body, media_type=CONTENT_TYPE)


class StatusOut(BaseModel):
    """The router's state as this process sees it."""

    version: str
    ready: bool
    checks: dict[str, bool] = Field(description="the readiness conditions of /readyz")
    storage: dict[str, Any] = Field(description="`mode` (embedded or server), `up`, and `detail` when down")
    generation: dict[str, Any] | None = Field(
        description="the active generation: `provider`, `model` (a service's identity: provider:model@url and "
        "its text options), `text` template, `dimension`, `id`, `rebuild_pending`"
    )
    embedding: dict[str, Any] | None = Field(
        description="the served model: `provider` (local, openai, azure), `model`, `dimension`; a local model's "
        "`device`, `threads` and query `lanes`; a service's `url`, prefixes, input types, `batch_size`, "
        "`concurrency` and `failure` (why its last request failed, null when it succeeded)"
    )
    multilingual: dict[str, Any] | None = Field(
        None,
        description="the multilingual space (None without one): its `model`, whether it is `served` yet, its "
        "generation `id` and `dimension`, and the namespaces it lags (`behind`)",
    )
    catalogs: list[dict[str, Any]] = Field(
        description="the catalogs this API key may use, each with `last_sync` (this process's last sync of it: "
        "`source`, `outcome`, `at`, `counts`, `detail`) and `progress` (functions written of the embedding "
        "under way)"
    )
    sync: dict[str, Any] = Field(description="`running`: embeddings under way; `functions_written` since start")
    traffic: dict[str, Any] = Field(
        description="POST /v1/route over the last minute (`recent`) and since start: requests, errors, rate, "
        "latency percentiles in ms"
    )
    auth: dict[str, Any] = Field(description="`keys`: whether API keys are required; `namespaces` this key may use")


def _generation(service: CatalogService) -> dict[str, Any] | None:
    if not service.catalogs.ready:
        return None
    generation = service.index.generation
    return {
        "provider": generation.model.partition(":")[0] if is_remote(generation.model) else "local",
        "model": generation.model,
        "text": generation.text,
        "dimension": generation.dimension,
        "id": generation.id,
        "rebuild_pending": service.rebuild_pending,
    }


def _multilingual(service: CatalogService, access: Access) -> dict[str, Any] | None:
    writer, served = service.multilingual, service.catalogs.multilingual
    if writer is None:
        return None
    generation = served.generation if served is not None else None
    return {
        "model": writer.model,
        "served": served is not None,
        "id": generation.id if generation else None,
        "dimension": generation.dimension if generation else None,
        "behind": sorted(n for n in service.catalogs.behind if access.allows(n)),
    }


def _catalog(
    namespace: str, record: CatalogRecord | None, result: SyncResult | None, underway: SyncProgress | None
) -> dict[str, Any]:
    return {
        "namespace": namespace,
        "source": record.source if record else None if result is None else result.source,
        "count": record.count if record else 0,
        "updated_at": record.updated_at if record else None,
        "pinned": list(record.pinned) if record else [],
        "last_sync": None if result is None else result.as_dict(),
        "progress": None if underway is None else underway.as_dict(),
    }


@router.get("/status", responses=responses(401))
async def status(request: Request, access: AccessDep, runtime: RuntimeDep) -> StatusOut:
    """The catalogs (with last sync and progress), generation, readiness, storage, embedding backend and traffic."""
    checks = runtime.readiness()
    mode = "embedded" if runtime.settings.storage.embedded else "server"
    storage: dict[str, Any] = {"mode": mode, "up": False, "detail": None}
    catalogs: list[dict[str, Any]] = []
    generation = embedding = multilingual = None
    running: list[dict[str, Any]] = []
    try:
        service = runtime.service
    except StorageUnavailable as exc:
        storage["detail"] = str(exc)
    else:
        generation, multilingual = _generation(service), _multilingual(service, access)
        embedding = service.index.embedder.describe() if service.catalogs.ready else None
        progress = {n: p for n, p in service.log.running.items() if access.allows(n)}
        running = [p.as_dict() for p in progress.values()]
        try:
            records = await service.catalogs.records()
            storage["up"] = True
        except Exception as exc:  # the status must answer when storage does not
            log.debug("status: storage unavailable", extra={"detail": str(exc)})
            records, storage["detail"] = {}, str(exc) or type(exc).__name__
        results = service.log.results
        # A first sync under way, or a refused first file, has no stored record yet.
        unstored = sorted((set(progress) | {n for n, r in results.items() if r.outcome in _FAILED}) - set(records))
        catalogs = [
            _catalog(n, records.get(n), results.get(n), progress.get(n))
            for n in [*records, *unstored]
            if access.allows(n)
        ]
    traffic: Traffic = request.app.state.traffic
    return StatusOut(
        version=request.app.version,
        ready=runtime.ready(checks),
        checks=checks,
        storage=storage,
        generation=generation,
        embedding=embedding,
        multilingual=multilingual,
        catalogs=catalogs,
        sync={"running": running, "functions_written": runtime.metrics.written},
        traffic=traffic.summary(),
        auth={
            "keys": request.app.state.api_keys is not None,
            "namespaces": None if access.namespaces is None else sorted(access.namespaces),
        },
    )
