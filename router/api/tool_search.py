"""``POST /v1/tool_search``: a model's search call, answered in the shape of its API.

The search is a route (the same hybrid scoring, usage examples and session context), of the
query as the turn's one user message. The catalog's pinned functions are not returned: the
tool list loads them from the start.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends

from router.api.auth import AccessDep, check_session, get_access
from router.api.deps import RuntimeDep, TurnRouterDep
from router.api.errors import responses
from router.api.limits import check_body
from router.api.tool_schemas import FoundFunction, ToolSearchIn, ToolSearchOut
from router.catalog.functions import validate_namespace
from router.common.errors import InvalidRequest
from router.retrieval.scored import ScoredFunction
from router.routing.turns import Turn, TurnRouter
from router.tools import search_item

router = APIRouter(prefix="/v1", tags=["tool search"], dependencies=[Depends(get_access), Depends(check_body)])
MAX_NAMESPACES = 16


def namespaces_of(body: ToolSearchIn) -> list[str]:
    """The request's namespaces, validated, without repeats."""
    given = [body.namespace] if isinstance(body.namespace, str) else body.namespace
    if not given or len(given) > MAX_NAMESPACES:
        raise InvalidRequest(f"namespace: give one namespace or a list of 1 to {MAX_NAMESPACES}", field="namespace")
    for position, namespace in enumerate(given):
        where = "namespace" if isinstance(body.namespace, str) else f"namespace[{position}]"
        validate_namespace(namespace, source=where)
    return list(dict.fromkeys(given))


async def search(turns: TurnRouter, namespaces: list[str], body: ToolSearchIn) -> list[tuple[str, ScoredFunction]]:
    """Route the query in each namespace; the best functions of all, by score, each name once."""
    settings = turns.settings
    wanted = body.max_functions or settings.max_functions
    answers = await asyncio.gather(
        *(
            turns.route(
                Turn(
                    namespace=namespace,
                    messages=[{"role": settings.roles[0], "content": body.query}],
                    session_id=body.session_id,
                    user_id=body.user_id,
                    max_functions=wanted,
                    recent_messages=settings.recent_messages if body.session_id is not None else 0,
                    history_messages=0,
                )
            )
            for namespace in namespaces
        )
    )
    found = [(namespace, f) for namespace, routed in zip(namespaces, answers, strict=True) for f in routed.functions]
    found.sort(key=lambda item: -item[1].score)
    chosen: dict[str, tuple[str, ScoredFunction]] = {}
    for namespace, function in found:
        chosen.setdefault(function.function.name, (namespace, function))
    return list(chosen.values())[:wanted]


@router.post("/tool_search", responses=responses(400, 401, 403, 404, 413, 422, 503))
async def tool_search(
    body: ToolSearchIn, access: AccessDep, turns: TurnRouterDep, runtime: RuntimeDep
) -> ToolSearchOut:
    """Answer a model's search call: the item its API takes back, and the functions found with their scores."""
    namespaces = namespaces_of(body)
    for namespace in namespaces:
        access.check(namespace)
    if body.format == "anthropic" and body.call_id is None:
        raise InvalidRequest("call_id: required with format 'anthropic' (the tool_use id to answer)", field="call_id")
    if body.session_id is not None:
        await check_session(access, turns, body.session_id)
    found = await search(turns, namespaces, body)
    runtime.metrics.routed("tool_search")
    return ToolSearchOut(
        item=search_item(body.format, [f.function for _, f in found], call_id=body.call_id),
        functions=[
            FoundFunction(name=f.function.name, namespace=ns, description=f.function.description, score=f.score)
            for ns, f in found
        ],
    )
