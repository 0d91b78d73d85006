"""``/v1/catalogs/{namespace}/examples``: the usage examples a namespace learned, to read and to delete.

A usage example is a request that led to a successful call of a function; routing scores the
function by it. Operators list them (one function's, or all, a page at a time) and delete one,
one function's or all of them, as users do with their memories, with an API key that may use
the namespace. Deleting a function's examples also drops the runs that taught its companions,
and deleting all of a namespace's resets its companions: what one poisoned run taught can
be undone entirely.
"""

from __future__ import annotations

import asyncio
import re
from typing import Annotated

from fastapi import Depends, Path, Query
from pydantic import BaseModel, Field

from router.api.auth import AccessDep, CatalogsDep, get_access
from router.api.errors import responses
from router.api.limits import body_router
from router.api.schemas import NAMESPACE
from router.common.errors import InvalidRequest, NotFound
from router.retrieval.catalogs import Catalogs
from router.retrieval.examples import cursor

router = body_router("/v1/catalogs", ["usage examples"], Depends(get_access))
NamespacePath = Path(pattern=NAMESPACE, description="the catalog's namespace")
# What ``router.retrieval.examples.cursor`` writes: the example's order, and its id.
CURSOR = r"^\d{20}\.[0-9a-f-]{36}$"
FunctionQuery = Query(None, min_length=1, max_length=256, description="only the examples of this function")


class ExampleItem(BaseModel):
    """One usage example."""

    id: str
    function: str = Field(description="the function the request led to")
    request: str = Field(description="the request (the user's turn, or the part of it the call served)")
    stored_at: float = Field(description="when it was stored (Unix seconds)")
    called_with: list[str] = Field(
        description="the other functions its run called for the same turn (they never outvote it)"
    )


class ExamplesOut(BaseModel):
    """A page of a namespace's usage examples, oldest first."""

    namespace: str
    examples: list[ExampleItem]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null on the last one")


class ExamplesDeletedOut(BaseModel):
    """How many usage examples a deletion removed."""

    namespace: str
    deleted: int


@router.get("/{namespace}/examples", responses=responses(401, 403, 404, 422, 503))
async def list_examples(
    access: AccessDep,
    catalogs: CatalogsDep,
    namespace: str = NamespacePath,
    function: str | None = FunctionQuery,
    limit: Annotated[int, Query(ge=1, le=1000, description="examples per page")] = 100,
    cursor_: Annotated[
        str | None,
        Query(alias="cursor", max_length=64, description="the `next_cursor` of the previous page"),
    ] = None,
) -> ExamplesOut:
    """The namespace's usage examples (one function's with `function`), oldest first, a page at a time."""
    if cursor_ is not None and re.fullmatch(CURSOR, cursor_) is None:
        raise InvalidRequest(f"cursor: {cursor_!r} is no page of this list; pass the previous page's next_cursor")
    access.check(namespace)
    await catalogs.record(namespace)
    await _held(catalogs, namespace, function)
    examples = catalogs.index.store.examples
    page = await asyncio.to_thread(examples.page, namespace, name=function, limit=limit + 1, after=cursor_)
    items = [
        ExampleItem(
            id=r.id,
            function=r.payload["name"],
            request=r.payload["text"],
            stored_at=int(r.payload.get("seq", 0)) / 1e6,
            called_with=list(r.payload.get("with", ())),
        )
        for r in page[:limit]
    ]
    following = cursor(page[limit - 1]) if len(page) > limit else None
    return ExamplesOut(namespace=namespace, examples=items, next_cursor=following)


@router.delete("/{namespace}/examples/{example_id}", responses=responses(401, 403, 404, 422, 503))
async def delete_example(
    access: AccessDep,
    catalogs: CatalogsDep,
    namespace: str = NamespacePath,
    example_id: str = Path(max_length=64, description="an example's id, from the list"),
) -> ExamplesDeletedOut:
    """Delete one usage example (404 when the namespace holds none of that id)."""
    access.check(namespace)
    await catalogs.record(namespace)
    examples = catalogs.index.store.examples
    if not await asyncio.to_thread(examples.delete, namespace, example_id):
        raise NotFound(f"example_id: namespace {namespace!r} has no usage example {example_id!r}")
    return ExamplesDeletedOut(namespace=namespace, deleted=1)


@router.delete("/{namespace}/examples", responses=responses(401, 403, 404, 422, 503))
async def delete_examples(
    access: AccessDep,
    catalogs: CatalogsDep,
    namespace: str = NamespacePath,
    function: str | None = FunctionQuery,
) -> ExamplesDeletedOut:
    """Delete the namespace's usage examples (one function's with `function`), and the companions they taught."""
    access.check(namespace)
    await catalogs.record(namespace)
    await _held(catalogs, namespace, function)
    store = catalogs.index.store
    deleted = await asyncio.to_thread(store.examples.clear, namespace, name=function)
    names = None if function is None else [function]
    await asyncio.to_thread(store.companions.forget, namespace, names)
    return ExamplesDeletedOut(namespace=namespace, deleted=deleted)


async def _held(catalogs: Catalogs, namespace: str, function: str | None) -> None:
    """Refuse a ``function`` the catalog does not hold (404 naming the field)."""
    # A function's examples go with it: a name the catalog lacks is a typo or a function gone, never an empty list.
    if function is not None and not await asyncio.to_thread(catalogs.index.store.existing, namespace, [function]):
        raise NotFound(f"function: catalog {namespace!r} has no function {function!r}")
