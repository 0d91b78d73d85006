"""``/v1/catalogs``: replace, read and delete a namespace's functions."""

from __future__ import annotations

from fastapi import APIRouter, Path

from router.api.deps import ServiceDep
from router.api.errors import responses
from router.catalog import parse_catalog
from router.schemas import NAMESPACE, CatalogIn, CatalogInfo, CatalogOut, CatalogsOut, ReconcileOut

router = APIRouter(prefix="/v1/catalogs", tags=["catalogs"])
NamespacePath = Path(pattern=NAMESPACE, description="the catalog's namespace")


@router.get("", responses=responses(503))
async def list_catalogs(service: ServiceDep) -> CatalogsOut:
    """List every known catalog."""
    records = await service.catalogs()
    return CatalogsOut(catalogs=[CatalogInfo(**r.__dict__) for r in records.values()])


@router.put("/{namespace}", responses=responses(422, 503))
async def put_catalog(body: CatalogIn, service: ServiceDep, namespace: str = NamespacePath) -> ReconcileOut:
    """Replace a catalog and reconcile it now; only new or changed functions are embedded."""
    functions = parse_catalog(body.functions, source=f"PUT /v1/catalogs/{namespace}: functions")
    summary = await service.apply(namespace, functions, source="api")
    return ReconcileOut(namespace=namespace, **summary.counts())


@router.get("/{namespace}", responses=responses(404, 422, 503))
async def get_catalog(service: ServiceDep, namespace: str = NamespacePath) -> CatalogOut:
    """A catalog's functions, as registered."""
    record = await service.catalog(namespace)
    functions = await service.functions(namespace)
    return CatalogOut(**record.__dict__, functions=[dict(f.definition) for f in functions])


@router.delete("/{namespace}", responses=responses(404, 422, 503))
async def delete_catalog(service: ServiceDep, namespace: str = NamespacePath) -> ReconcileOut:
    """Delete a catalog and all its functions."""
    summary = await service.remove(namespace)
    return ReconcileOut(namespace=namespace, **summary.counts())
