"""``POST /v1/route``: the functions that matter for a turn, with history and memories."""

from __future__ import annotations

from fastapi import Depends

from router.api.auth import AccessDep, RuntimeDep, TurnRouterDep, check_session, get_access
from router.api.errors import responses
from router.api.limits import body_router
from router.api.schemas import Explanation, LeftOutOut, MemoryOut, RoutedFunction, RouteIn, RouteOut
from router.catalog.functions import FunctionDef
from router.routing.routed import Turn, pinned_first
from router.sessions.recall import memory_context
from router.tools import ToolList, anthropic_tools, catalog_tools
from router.tools.limits import CHAT_COMPLETIONS_TOOLS, LeftOut, named

router = body_router("/v1", ["route"], Depends(get_access))


@router.post("/route", responses=responses(400, 401, 403, 404, 413, 422, 503))
async def route(body: RouteIn, access: AccessDep, turns: TurnRouterDep, runtime: RuntimeDep) -> RouteOut:
    """Return the top functions for the turn (scores, schemas verbatim), the history and memories."""
    access.check(body.namespace)
    if body.session_id is not None:
        await check_session(access, turns, body.session_id)
    defaults = turns.settings
    routed = await turns.route(
        Turn(
            namespace=body.namespace,
            messages=[m.model_dump() for m in body.messages],
            session_id=body.session_id,
            user_id=body.user_id,
            max_functions=body.max_functions or defaults.max_functions,
            recent_messages=defaults.recent_messages if body.recent_messages is None else body.recent_messages,
            min_score=body.min_score,
            pinned=body.pinned,
            history_messages=defaults.history_messages if body.history_messages is None else body.history_messages,
            explain=body.explain,
        )
    )
    chosen = pinned_first(routed)
    runtime.metrics.routed("route")
    explained = {n: Explanation.model_validate(e, from_attributes=True) for n, e in routed.explanations.items()}
    functions = [f for f, _, _ in chosen]
    listed = anthropic_tools(functions) if body.format == "anthropic" else chat_tools(functions)
    if body.defer_rest and not routed.degraded:
        catalog = await runtime.catalogs.functions(body.namespace)
        listed = catalog_tools(body.format, body.namespace, catalog, loaded=[f.name for f, _, _ in chosen])
    return RouteOut(
        functions=[
            RoutedFunction(
                name=f.name,
                description=f.description,
                score=score,
                parameters=dict(f.parameters),
                pinned=pinned,
                explanation=None if pinned else explained.get(f.name),
            )
            for f, score, pinned in chosen
        ],
        tools=listed.tools,
        left_out=[LeftOutOut(name=f.name, reason=f.reason) for f in listed.left_out],
        history=routed.history,
        memories=[MemoryOut(text=m.text, score=m.score) for m in routed.memories],
        memory_context=memory_context(routed.memories),
        context=routed.context,
        recent_context=routed.recent_context,
        degraded=routed.degraded,
        below_min_score=routed.below_min_score,
    )


def chat_tools(functions: list[FunctionDef]) -> ToolList:
    """The functions as Chat Completions ``tools``, in order, within what that API takes."""
    usable, left_out = named("openai", functions)
    reason = f"Chat Completions takes at most {CHAT_COMPLETIONS_TOOLS} tools; pinned ones come first"
    left_out += [LeftOut(f.name, reason) for f in usable[CHAT_COMPLETIONS_TOOLS:]]
    return ToolList([f.openai_tool() for f in usable[:CHAT_COMPLETIONS_TOOLS]], left_out)
