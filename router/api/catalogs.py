"""``/v1/catalogs``: replace, read and delete a namespace's functions, or list them as a model API's ``tools``."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Annotated, Any

from fastapi import Depends, Header, Path, Query, Response

from router.api.auth import AccessDep, CatalogsDep, RuntimeDep, ServiceDep, get_access
from router.api.errors import responses
from router.api.limits import body_router
from router.api.schemas import NAMESPACE, CatalogIn, CatalogInfo, CatalogOut, CatalogsOut, ReconcileOut
from router.api.tool_search import CatalogToolsOut
from router.catalog.functions import parse_document, validate_namespace
from router.catalog.records import CatalogRecord
from router.common.errors import CatalogConflict, InvalidRequest
from router.server.runtime import Runtime
from router.tools import ListFormat, catalog_tools
from sync.service import CatalogService


def _info(record: CatalogRecord) -> dict[str, Any]:
    return {**record.__dict__, "pinned": list(record.pinned)}


router = body_router("/v1/catalogs", ["catalogs"], Depends(get_access))
NamespacePath = Path(pattern=NAMESPACE, description="the catalog's namespace")


@router.get("", responses=responses(401, 503))
async def list_catalogs(access: AccessDep, catalogs: CatalogsDep) -> CatalogsOut:
    """List the known catalogs (those the API key may use)."""
    records = await catalogs.records()
    return CatalogsOut(catalogs=[CatalogInfo(**_info(r)) for r in records.values() if access.allows(r.namespace)])


async def check_owned(service: CatalogService, runtime: Runtime, namespace: str) -> None:
    """Refuse to change a catalog this server's catalog directory keeps: its worker would undo the change.

    Raises:
        CatalogConflict: the catalog comes from the directory of ``router serve --catalog``.
    """
    worker = runtime.worker
    if worker is None:
        return
    record = await asyncio.to_thread(service.meta.catalog, namespace)
    # Its file counts before the first pass has written it: the pass would overwrite the change.
    if (record is not None and record.source == worker.source) or await asyncio.to_thread(worker.has_file, namespace):
        where = worker.source.removeprefix("dir:")
        raise CatalogConflict(
            f"catalog {namespace!r} is kept from the catalog directory {where}: edit its file there "
            "(a removed file's catalog goes with --allow-delete), or use another namespace",
            field="namespace",
        )


@router.put("/{namespace}", responses=responses(400, 401, 403, 409, 413, 422, 503))
async def put_catalog(
    body: CatalogIn, access: AccessDep, service: ServiceDep, runtime: RuntimeDep, namespace: str = NamespacePath
) -> ReconcileOut:
    """Replace a catalog and reconcile it now; only new or changed functions are embedded."""
    access.check(namespace)
    validate_namespace(namespace, source="namespace")
    # The body's own lists, not a deep copy (model_dump of thousands of definitions takes a while), off the
    # loop; orjson decoded it, so it holds no NaN.
    source = f"PUT /v1/catalogs/{namespace}"
    document = await asyncio.to_thread(parse_document, dict(body), source=source, finite=True)
    await check_owned(service, runtime, namespace)
    summary = await service.apply(namespace, document.functions, source="api", pinned=document.pinned)
    return ReconcileOut(namespace=namespace, **summary.counts())


@router.get("/{namespace}", responses=responses(401, 403, 404, 422, 503))
async def get_catalog(access: AccessDep, catalogs: CatalogsDep, namespace: str = NamespacePath) -> CatalogOut:
    """A catalog's functions, as registered."""
    access.check(namespace)
    record = await catalogs.record(namespace)
    functions = await catalogs.functions(namespace)
    return CatalogOut(**_info(record), functions=[dict(f.definition) for f in functions])


@router.delete("/{namespace}", responses=responses(401, 403, 404, 409, 422, 503))
async def delete_catalog(
    access: AccessDep, service: ServiceDep, runtime: RuntimeDep, namespace: str = NamespacePath
) -> ReconcileOut:
    """Delete a catalog and all its functions."""
    access.check(namespace)
    await check_owned(service, runtime, namespace)
    summary = await service.remove(namespace)
    return ReconcileOut(namespace=namespace, **summary.counts())


tools_router = body_router("/v1/catalogs", ["tool search"], Depends(get_access))


@tools_router.get(
    "/{namespace}/tools",
    response_model=CatalogToolsOut,
    responses={
        **responses(401, 403, 404, 422, 503),
        304: {"description": "Not modified: the list has the `ETag` sent in `If-None-Match`"},
    },
)
async def catalog_tool_list(
    access: AccessDep,
    catalogs: CatalogsDep,
    namespace: str = NamespacePath,
    format: Annotated[ListFormat, Query(description="the API whose `tools` array to answer")] = "openai",
    load: Annotated[
        list[str], Query(max_length=128, description="functions to load from the start, besides the pinned")
    ] = [],  # noqa: B006 (FastAPI copies defaults)
    if_none_match: Annotated[str | None, Header(description="the `ETag` of the list held: 304 when unchanged")] = None,
) -> Response:
    """The search tool, the pinned functions (and those of `load`) loaded, every other function deferred.

    The same catalog gives the same bytes (and `ETag`), so the provider's prompt cache holds.
    """
    access.check(namespace)
    record = await catalogs.record(namespace)
    functions = await catalogs.functions(namespace)
    names = {f.name for f in functions}
    for position, name in enumerate(load):
        if name not in names:
            raise InvalidRequest(f"load[{position}]: no function named {name!r} in this catalog", field="load")
    listed = catalog_tools(format, namespace, functions, loaded=[*record.pinned, *load])
    answer = {
        "namespace": namespace,
        "format": format,
        "tools": listed.tools,
        "left_out": [{"name": f.name, "reason": f.reason} for f in listed.left_out],
    }
    body = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    # Weak comparison, as RFC 9110 has it for If-None-Match: a proxy may have weakened the tag ("W/").
    held = {tag.strip().removeprefix("W/") for tag in (if_none_match or "").split(",")}
    if etag in held or "*" in held:
        return Response(status_code=304, headers={"etag": etag})
    return Response(body, media_type="application/json", headers={"etag": etag, "cache-control": "no-cache"})
