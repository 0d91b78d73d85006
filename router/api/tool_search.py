"""``POST /v1/tool_search``: a model's search call, answered in the shape of its API.

The search is a route (the same hybrid scoring, usage examples and session context), of the
query as the turn's one user message. The catalog's pinned functions are not returned: the
tool list loads them from the start. The bodies of the tool search endpoints are here too
(``CatalogToolsOut`` answers ``GET /v1/catalogs/{namespace}/tools``).
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from fastapi import Depends
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from router.api.auth import AccessDep, RuntimeDep, TurnRouterDep, check_session, get_access
from router.api.errors import responses
from router.api.limits import body_router
from router.api.schemas import IDENTIFIER, NAMESPACE, LeftOutOut
from router.common.errors import InvalidRequest
from router.retrieval.catalogs import Catalogs
from router.retrieval.scored import ScoredFunction
from router.routing.routed import Turn
from router.routing.turns import TurnRouter
from router.tools import CALL_ID_REQUIRED, search_item
from router.tools.limits import MAX_DEFERRED, unsearchable

MAX_FUNCTIONS = 128
MAX_NAMESPACES = 16
_Namespace = Annotated[str, Field(pattern=NAMESPACE)]
_NAMESPACE = TypeAdapter(_Namespace)
_NAMESPACES = TypeAdapter(Annotated[list[_Namespace], Field(min_length=1, max_length=MAX_NAMESPACES)])


class ToolSearchIn(BaseModel):
    """A search call of a model, to answer in the shape of its API."""

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"namespace": "travel", "query": "book a flight to Rome", "format": "openai", "call_id": "call_1"},
                {"namespace": ["travel", "commerce"], "query": "refund my order", "format": "anthropic",
                 "call_id": "toolu_01", "max_functions": 2},
            ]
        },
    )  # fmt: skip

    namespace: str | list[str] = Field(
        "default",
        description="the catalog to search, or a list of catalogs searched together (up to 16)",
        json_schema_extra={"anyOf": [_NAMESPACE.json_schema(), _NAMESPACES.json_schema()]},
    )
    query: str = Field(min_length=1, max_length=10_000, description="what the model searched for")
    max_functions: int | None = Field(None, ge=1, le=MAX_FUNCTIONS, description="functions to find (default 3)")
    session_id: str | None = Field(None, pattern=IDENTIFIER, description="its recent messages add context")
    user_id: str | None = Field(None, pattern=IDENTIFIER)
    format: Literal["openai", "anthropic", "mcp", "plain"] = Field("openai", description="the API whose item to answer")
    call_id: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="the search call's id: `call_id` of the `tool_search_call` (OpenAI), `id` of the `tool_use` "
        "(Anthropic, required)",
    )

    @field_validator("query")
    @classmethod
    def _has_text(cls, query: str) -> str:
        if not query.strip():
            raise ValueError("holds no text")
        return query


class FoundFunction(BaseModel):
    """A function a search found."""

    name: str
    namespace: str
    description: str
    score: float


class ToolSearchOut(BaseModel):
    """The item to hand back to the model's API, and what it holds."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "item": {
                        "type": "tool_search_output",
                        "execution": "client",
                        "status": "completed",
                        "call_id": "call_1",
                        "tools": [
                            {
                                "type": "function",
                                "name": "search_flights",
                                "description": "Search flights between two airports on a date.",
                                "parameters": {"type": "object", "properties": {"origin": {"type": "string"}}},
                                "strict": False,
                                "defer_loading": True,
                            }
                        ],
                    },
                    "functions": [
                        {"name": "search_flights", "namespace": "travel", "description": "...", "score": 0.61}
                    ],
                }
            ]
        }
    )

    item: dict[str, Any] = Field(
        description="OpenAI: a `tool_search_output` input item; Anthropic: a `tool_result` content block of "
        "`tool_reference` blocks; MCP: a `tools/list` result; plain: `{functions: [...]}`"
    )
    functions: list[FoundFunction] = Field(description="the functions found, best first")
    left_out: list[LeftOutOut] = Field(
        default_factory=list, description="functions found but kept out of `item`: the API refuses their names"
    )


class CatalogToolsOut(BaseModel):
    """A catalog as one API's ``tools`` array."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "namespace": "travel",
                    "format": "anthropic",
                    "tools": [
                        {
                            "name": "tool_search",
                            "description": "Search the 'travel' catalog for the functions a task needs, and load "
                            "them. It holds 15 functions about: booking, flights, hotel, ...",
                            "input_schema": {
                                "type": "object",
                                "properties": {"query": {"type": "string"}},
                                "required": ["query"],
                            },
                        },
                        {
                            "name": "get_booking",
                            "description": "Look up a booking by its reference.",
                            "input_schema": {"type": "object", "properties": {"reference": {"type": "string"}}},
                        },
                        {
                            "name": "search_flights",
                            "description": "Search flights between two airports on a date.",
                            "input_schema": {"type": "object", "properties": {"origin": {"type": "string"}}},
                            "defer_loading": True,
                        },
                    ],
                }
            ]
        }
    )

    namespace: str
    format: str = Field(description="openai (Responses API) or anthropic (Messages API)")
    tools: list[dict[str, Any]] = Field(
        description="the search tool first, then the loaded functions, then every other function deferred, by name"
    )
    left_out: list[LeftOutOut] = Field(
        default_factory=list,
        description="functions kept out of `tools` because the API would refuse them: a name it does not "
        "take, or more deferred tools than it takes (the last by name)",
    )


router = body_router("/v1", ["tool search"], Depends(get_access))


def namespaces_of(body: ToolSearchIn) -> list[str]:
    """The request's namespaces without repeats, refused as a route's ``namespace`` is when one is no name."""
    try:
        if isinstance(body.namespace, str):
            given = [_NAMESPACE.validate_python(body.namespace)]
        else:
            given = _NAMESPACES.validate_python(body.namespace)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("body", "namespace", *e["loc"])} for e in exc.errors()]) from None
    return list(dict.fromkeys(given))


async def search(
    turns: TurnRouter, namespaces: list[str], body: ToolSearchIn
) -> tuple[list[tuple[str, ScoredFunction]], list[LeftOutOut]]:
    """Route the query in each namespace; the best functions of all, by score, each name once.

    A tool list holds one tool of a name, so of a name two namespaces share the better scored
    is found. Functions whose names the API of ``body.format`` refuses are left out, and named; the
    search reaches past them, so that ``max_functions`` are found while the catalogs hold more.
    """
    settings = turns.settings
    wanted = body.max_functions or settings.max_functions
    limit = wanted
    while True:
        answers = await asyncio.gather(
            *(
                turns.route(
                    Turn(
                        namespace=namespace,
                        messages=[{"role": settings.roles[0], "content": body.query}],
                        session_id=body.session_id,
                        user_id=body.user_id,
                        max_functions=limit,
                        recent_messages=settings.recent_messages if body.session_id is not None else 0,
                        history_messages=0,
                        recorded=False,
                    )
                )
                for namespace in namespaces
            )
        )
        found = [(ns, f) for ns, routed in zip(namespaces, answers, strict=True) for f in routed.functions]
        chosen, left_out = _usable(body.format, found, wanted)
        # Refused names took places: the search reaches further, while the catalogs hold more.
        more = any(len(routed.functions) >= limit for routed in answers)
        if len(chosen) == wanted or not left_out or not more or limit == MAX_FUNCTIONS:
            return chosen, left_out
        limit = min(max(2 * limit, wanted + len(left_out)), MAX_FUNCTIONS)


def _usable(
    format: str, found: list[tuple[str, ScoredFunction]], wanted: int
) -> tuple[list[tuple[str, ScoredFunction]], list[LeftOutOut]]:
    """The ``wanted`` best of ``found`` whose names ``format``'s API takes, each name once; the refused ones named."""
    chosen: dict[str, tuple[str, ScoredFunction]] = {}
    left_out: dict[str, LeftOutOut] = {}
    for namespace, function in sorted(found, key=lambda item: -item[1].score):
        if len(chosen) == wanted:
            break
        refused = unsearchable(format, function.function.name)
        if refused is None:
            chosen.setdefault(function.function.name, (namespace, function))
        else:
            left_out.setdefault(refused.name, LeftOutOut(name=refused.name, reason=refused.reason))
    return list(chosen.values()), list(left_out.values())


LISTED_OUT = "past the API's count limit, the catalog's tool list left it out: a tool_reference to it is refused"


async def past_the_list(catalogs: Catalogs, format: str, namespaces: list[str]) -> dict[str, set[str]]:
    """Each namespace's functions that its tool list (pinned loaded, no ``load``) leaves out past the API's count."""
    most = MAX_DEFERRED.get(format)
    left: dict[str, set[str]] = {ns: set() for ns in namespaces}
    if most is None:
        return left
    for namespace in namespaces:
        record = await catalogs.record(namespace)
        if record.count - len(record.pinned) > most:
            names = await asyncio.to_thread(catalogs.index.store.hashes, namespace)
            left[namespace] = set(sorted(n for n in names if n not in record.pinned)[most:])
    return left


@router.post("/tool_search", responses=responses(400, 401, 403, 404, 413, 422, 503))
async def tool_search(
    body: ToolSearchIn, access: AccessDep, turns: TurnRouterDep, runtime: RuntimeDep
) -> ToolSearchOut:
    """Answer a model's search call: the item its API takes back, and the functions found with their scores."""
    namespaces = namespaces_of(body)
    for namespace in namespaces:
        access.check(namespace)
    if body.format == "anthropic" and body.call_id is None:
        raise InvalidRequest(CALL_ID_REQUIRED, field="call_id")
    if body.session_id is not None:
        await check_session(access, turns, body.session_id)
    found, left_out = await search(turns, namespaces, body)
    unlisted = await past_the_list(runtime.catalogs, body.format, list(dict.fromkeys(ns for ns, _ in found)))
    left_out += [
        LeftOutOut(name=f.function.name, reason=LISTED_OUT) for ns, f in found if f.function.name in unlisted[ns]
    ]
    found = [(ns, f) for ns, f in found if f.function.name not in unlisted[ns]]
    if body.session_id is not None:  # what the model was given, to check its calls against
        for namespace in namespaces:
            turns.remember(body.session_id, namespace, "search", body.query, [f for ns, f in found if ns == namespace])
    runtime.metrics.routed("tool_search")
    return ToolSearchOut(
        item=search_item(body.format, [f.function for _, f in found], call_id=body.call_id),
        functions=[
            FoundFunction(name=f.function.name, namespace=ns, description=f.function.description, score=f.score)
            for ns, f in found
        ],
        left_out=left_out,
    )
