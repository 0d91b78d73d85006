"""``GET /v1/catalogs/{namespace}/tools``: a catalog as one model API's ``tools`` array, deferred."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Path, Query
from fastapi.responses import Response

from router.api.auth import AccessDep, get_access
from router.api.deps import CatalogsDep
from router.api.errors import responses
from router.api.limits import check_body
from router.api.schemas import NAMESPACE
from router.api.tool_schemas import CatalogToolsOut
from router.common.errors import InvalidRequest
from router.tools import ListFormat, catalog_tools

router = APIRouter(prefix="/v1/catalogs", tags=["tool search"], dependencies=[Depends(get_access), Depends(check_body)])


@router.get(
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
    namespace: str = Path(pattern=NAMESPACE, description="the catalog's namespace"),
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
    tools = catalog_tools(format, namespace, functions, loaded=[*record.pinned, *load])
    body = json.dumps(
        {"namespace": namespace, "format": format, "tools": tools}, ensure_ascii=False, separators=(",", ":")
    ).encode()
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    if if_none_match is not None and etag in (tag.strip() for tag in if_none_match.split(",")):
        return Response(status_code=304, headers={"etag": etag})
    return Response(body, media_type="application/json", headers={"etag": etag, "cache-control": "no-cache"})
