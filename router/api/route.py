"""``POST /v1/route``: the functions that matter for a turn."""

from __future__ import annotations

from fastapi import APIRouter

from router.api.deps import ServiceDep
from router.api.errors import responses
from router.errors import InvalidRequest
from router.retrieval import context_texts, search_functions
from router.schemas import RoutedFunction, RouteIn, RouteOut

router = APIRouter(prefix="/v1", tags=["route"])
ROLES = ("user",)


@router.post("/route", responses=responses(404, 422, 503))
async def route(body: RouteIn, service: ServiceDep) -> RouteOut:
    """Return the top functions for the new messages, with scores and their schemas verbatim."""
    await service.catalog(body.namespace)
    texts = context_texts((m.model_dump() for m in body.messages), roles=ROLES)
    if not texts:
        raise InvalidRequest("messages: no message with a role that counts has any text", field="messages")
    context = "\n".join(texts)
    found = await search_functions(
        service.index, body.namespace, context, limit=body.max_functions, min_score=body.min_score
    )
    return RouteOut(
        functions=[
            RoutedFunction(
                name=f.function.name,
                description=f.function.description,
                score=f.score,
                parameters=dict(f.function.parameters),
            )
            for f in found
        ],
        tools=[f.function.openai_tool() for f in found],
        context=context,
    )
