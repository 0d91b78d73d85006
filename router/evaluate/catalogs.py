"""The catalogs an evaluation routes in: from a directory, a file, a running router, or a store."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from router.catalog.functions import CatalogDocument, parse_document
from router.catalog.records import MetaStore
from router.common.errors import CatalogInvalid
from router.retrieval.index import FunctionStore
from router.storage.base import Storage
from sync.files import read_file, scan, source_label
from sync.service import CatalogService

# Seconds a request to a running router may take: a catalog of 10,000 functions is a few megabytes.
_TIMEOUT = 30.0


class CatalogUnavailable(RuntimeError):
    """The catalogs cannot be read: a bad file, an unreachable router, an unknown namespace."""


def from_path(path: Path) -> dict[str, CatalogDocument]:
    """The catalogs of a catalog directory (one file per namespace) or of one catalog file."""
    if path.is_dir():
        files = scan(path)
    elif path.is_file():
        files = {path.stem: read_file(path)}
    else:
        raise CatalogUnavailable(f"catalog {path} does not exist")
    errors = [f.error for f in files.values() if f.error is not None]
    if errors:
        raise CatalogUnavailable("\n".join(errors))
    found = {ns: CatalogDocument(f.functions, f.pinned) for ns, f in files.items() if f.functions}
    if not found:
        raise CatalogUnavailable(f"catalog {path} holds no function")
    return found


async def from_router(
    url: str,
    namespace: str | None,
    *,
    api_key: str | None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> dict[str, CatalogDocument]:
    """The catalogs a running router serves (``namespace`` only, when given), read over its HTTP API."""
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    base = url.rstrip("/")
    try:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=_TIMEOUT, transport=transport) as client:
            if namespace is not None:
                namespaces = [namespace]
            else:
                namespaces = [c["namespace"] for c in (await _get(client, "/v1/catalogs"))["catalogs"]]
            found: dict[str, CatalogDocument] = {}
            for name in namespaces:
                body = await _get(client, f"/v1/catalogs/{name}")
                document = {"functions": body["functions"], "pinned": body.get("pinned", [])}
                found[name] = parse_document(document, source=f"{base} catalog {name!r}")
    except httpx.HTTPError as exc:
        raise CatalogUnavailable(f"cannot read the catalogs of {base}: {exc}") from exc
    except CatalogInvalid as exc:
        raise CatalogUnavailable(exc.detail) from exc
    if not found:
        raise CatalogUnavailable(f"{base} serves no catalog to this key")
    return found


async def _get(client: httpx.AsyncClient, path: str) -> dict[str, Any]:
    response = await client.get(path)
    if response.status_code in (401, 403):
        given = "authorization" in client.headers
        advice = "is not valid for it" if given else "is required: set ROUTER_API_KEY or --api-key"
        raise CatalogUnavailable(f"{client.base_url}{path}: {response.status_code}: an API key {advice}")
    if response.status_code == 404:
        raise CatalogUnavailable(f"{client.base_url}{path}: no such catalog")
    response.raise_for_status()
    body: dict[str, Any] = response.json()
    return body


def from_store(storage: Storage, namespaces: list[str] | None = None) -> dict[str, CatalogDocument]:
    """The catalogs a store holds in its active generation (``namespaces`` only, when given); read only."""
    meta = MetaStore.open(storage)
    records = meta.catalogs()
    generation = meta.active_generation()
    if generation is None or not records:
        raise CatalogUnavailable(f"{storage.location} holds no catalog")
    unknown = sorted(set(namespaces or ()) - set(records))
    if unknown:
        raise CatalogUnavailable(f"{storage.location} has no catalog named {unknown} (have {sorted(records)})")
    store = FunctionStore.open(storage, generation)
    return {ns: CatalogDocument(store.list(ns), records[ns].pinned) for ns in (namespaces or sorted(records))}


async def apply_all(service: CatalogService, catalogs: Mapping[str, CatalogDocument], *, source: str) -> None:
    """Write each catalog into the store being evaluated (only what changed is embedded)."""
    for namespace, document in catalogs.items():
        await service.apply(namespace, document.functions, source=source, pinned=document.pinned)


def label(path: Path | None, url: str | None) -> str:
    """The source label the catalogs are written with: the one ``router sync`` gives the same directory."""
    if path is not None:
        return source_label(path if path.is_dir() else path.parent)
    return f"eval:{url}" if url else "eval"


async def read(
    path: Path | None, url: str | None, namespace: str | None, api_key: str | None
) -> dict[str, CatalogDocument]:
    """The catalogs named on the command line: ``path`` or else the router at ``url``."""
    if path is not None:
        found = await asyncio.to_thread(from_path, path)
        if namespace is not None:
            if namespace not in found:
                raise CatalogUnavailable(f"catalog {path} has no namespace {namespace!r} (have {sorted(found)})")
            found = {namespace: found[namespace]}
        return found
    if url is None:
        raise CatalogUnavailable("no catalog: give --catalog, --url or --data")
    return await from_router(url, namespace, api_key=api_key)
