"""The catalog in the shapes of the model APIs' tool search with deferred loading.

OpenAI's Responses API (function tools with ``defer_loading``, a client-executed
``tool_search`` tool, ``tool_search_output`` items), Anthropic's Messages API (tools with
``defer_loading``, a custom search tool answered by ``tool_reference`` blocks in a
``tool_result``), MCP (tools as ``tools/list`` lists them) and a plain shape. Everything here
is pure: functions in, JSON objects out, the same bytes for the same catalog.

The search tool's description names the catalog, how many functions it holds and the things
they act on, most common first: a model that sees only the search tool (Anthropic withholds
deferred tools entirely) must learn from it what it may find. It is derived from the catalog
alone, so the tool list stays byte-stable for the prompt cache.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from router.catalog.functions import FunctionDef
from router.common.errors import InvalidRequest
from router.retrieval.texts import words
from router.tools.limits import SEARCH_TOOL, LeftOut, capped, named, searchable

__all__ = [
    "SEARCH_TOOL",
    "Format",
    "LeftOut",
    "ListFormat",
    "ToolList",
    "catalog_tools",
    "search_description",
    "search_item",
    "topics",
]

Format = Literal["openai", "anthropic", "mcp", "plain"]
ListFormat = Literal["openai", "anthropic"]
SEARCH_PARAMETERS = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "What you need to do, in plain words (for example: book a flight to Rome on Friday)",
        }
    },
    "required": ["query"],
    "additionalProperties": False,
}
CALL_ID_REQUIRED = "call_id: required with format 'anthropic' (the tool_use id to answer)"
NOTHING_FOUND = "No function of the catalog matches; say differently what you need to do."
TOPICS = 12
# Verbs and filler every catalog shares: they say nothing about what this one holds.
_COMMON = frozenset({
    "a", "add", "all", "an", "and", "apply", "by", "cancel", "check", "create", "current", "delete", "details",
    "do", "fetch", "find", "for", "from", "get", "info", "in", "is", "list", "lookup", "make", "new", "of", "on",
    "or", "post", "put", "read", "remove", "retrieve", "run", "search", "send", "set", "show", "the", "to",
    "update", "v", "with", "write",
})  # fmt: skip


def topics(functions: Sequence[FunctionDef], *, limit: int = TOPICS) -> list[str]:
    """The words of the functions' names that say what they act on, most functions first."""
    named = [{w for w in words(f.name) if w not in _COMMON and not w.isdigit() and len(w) > 1} for f in functions]
    seen = set().union(*named) if named else set()
    counts: Counter[str] = Counter()
    for found in named:
        # A plural counts as its singular when the catalog uses that too ("flights", "flight").
        counts.update({w[:-1] if w.endswith("s") and w[:-1] in seen else w for w in found})
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [word for word, _ in ranked[:limit]]


def search_description(namespace: str, functions: Sequence[FunctionDef]) -> str:
    """The search tool's description for the catalog ``namespace`` holding ``functions``."""
    if not functions:
        return f"Search the {namespace!r} catalog for functions to load. It holds no functions yet."
    about = topics(functions)
    count = f"{len(functions)} function{'s' if len(functions) != 1 else ''}"
    holds = f"It holds {count} about: {', '.join(about)}." if about else f"It holds {count}."
    return (
        f"Search the {namespace!r} catalog for the functions a task needs, and load them. {holds} "
        "Say in plain words what you need to do; the functions found become available to call."
    )


def _definition(function: FunctionDef, schema_key: str) -> dict[str, Any]:
    """``name``, ``description`` when there is one, and the object schema under ``schema_key``."""
    definition: dict[str, Any] = {"name": function.name}
    if function.description:
        definition["description"] = function.description
    definition[schema_key] = {"type": "object", **function.parameters}
    return definition


def _openai_tool(function: FunctionDef, *, deferred: bool) -> dict[str, Any]:
    """A Responses function tool (``FunctionToolParam``), marked ``defer_loading`` when deferred."""
    inner = function.definition.get("function") if function.shape == "openai" else function.definition
    strict = inner.get("strict") if isinstance(inner, Mapping) else None
    tool = {"type": "function", **_definition(function, "parameters"), "strict": strict is True}
    return {**tool, "defer_loading": True} if deferred else tool


def _anthropic_tool(function: FunctionDef, *, deferred: bool) -> dict[str, Any]:
    """A custom tool (``ToolParam``), marked ``defer_loading`` when deferred."""
    tool = _definition(function, "input_schema")
    return {**tool, "defer_loading": True} if deferred else tool


@dataclass(frozen=True)
class ToolList:
    """A ``tools`` array, and the functions the API's documented limits left out of it."""

    tools: list[dict[str, Any]]
    left_out: list[LeftOut] = field(default_factory=list)


def anthropic_tools(functions: Sequence[FunctionDef]) -> ToolList:
    """The functions as Anthropic Messages ``tools``, in order, within the names that API takes."""
    usable, left_out = named("anthropic", functions)
    return ToolList([_anthropic_tool(f, deferred=False) for f in usable], left_out)


def catalog_tools(
    format: ListFormat,
    namespace: str,
    functions: Sequence[FunctionDef],
    *,
    loaded: Sequence[str] = (),
) -> ToolList:
    """The search tool, then the ``loaded`` functions in their order, then every other function deferred.

    The rest are sorted by name and the search tool's description depends on the catalog
    only, so the same catalog and the same ``loaded`` give the same list, byte for byte.
    Functions the API would refuse (``router.tools.limits``) are left out, and named: those
    whose name it does not take, then deferred ones past its count limit, the last by name.
    """
    usable, left_out = searchable(format, functions)
    by_name = {f.name: f for f in usable}
    first = [by_name[name] for name in dict.fromkeys(loaded) if name in by_name]
    chosen = {f.name for f in first}
    rest = sorted((f for f in usable if f.name not in chosen), key=lambda f: f.name)
    kept, over = capped(format, rest)
    rest, left_out = rest[:kept], left_out + over
    description = search_description(namespace, sorted(functions, key=lambda f: f.name))
    search: dict[str, Any]
    if format == "openai":
        search = {"type": "tool_search", "execution": "client", "description": description}
        search["parameters"], tool = SEARCH_PARAMETERS, _openai_tool
    else:
        search = {"name": SEARCH_TOOL, "description": description, "input_schema": SEARCH_PARAMETERS}
        tool = _anthropic_tool
    tools = [search, *(tool(f, deferred=False) for f in first), *(tool(f, deferred=True) for f in rest)]
    return ToolList(tools, left_out)


def search_item(format: Format, functions: Sequence[FunctionDef], *, call_id: str | None) -> dict[str, Any]:
    """What the host hands back to its API for a search call that found ``functions``.

    OpenAI: the ``tool_search_output`` item answering a ``tool_search_call``, the found tools
    deferred as the list defers them; Anthropic: the ``tool_result`` block answering the
    search tool's ``tool_use``, one ``tool_reference`` per function (the API then loads those
    deferred tools) or a text block saying nothing was found; MCP: a ``tools/list`` result;
    plain: ``{"functions": [...]}`` in the bare shape.

    Raises:
        InvalidRequest: ``call_id`` is missing for the Anthropic format (a ``tool_result`` needs it).
    """
    if format == "openai":
        item: dict[str, Any] = {"type": "tool_search_output", "execution": "client", "status": "completed"}
        if call_id is not None:
            item["call_id"] = call_id
        return {**item, "tools": [_openai_tool(f, deferred=True) for f in functions]}
    if format == "anthropic":
        if call_id is None:
            raise InvalidRequest(CALL_ID_REQUIRED, field="call_id")
        content = [{"type": "tool_reference", "tool_name": f.name} for f in functions]
        return {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": content or [{"type": "text", "text": NOTHING_FOUND}],
        }
    if format == "mcp":
        return {"tools": [_definition(f, "inputSchema") for f in functions]}
    return {
        "functions": [
            {"name": f.name, "description": f.description, "parameters": {"type": "object", **f.parameters}}
            for f in functions
        ]
    }
