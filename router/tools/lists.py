"""A catalog as one API's ``tools`` array, and a search's answer as that API's item."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from router.catalog.functions import FunctionDef
from router.common.errors import InvalidRequest
from router.tools import anthropic, mcp, openai
from router.tools.summary import search_description

__all__ = ["Format", "ListFormat", "catalog_tools", "search_item"]

Format = Literal["openai", "anthropic", "mcp", "plain"]
ListFormat = Literal["openai", "anthropic"]


def catalog_tools(
    format: ListFormat,
    namespace: str,
    functions: Sequence[FunctionDef],
    *,
    loaded: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The search tool, then the ``loaded`` functions in their order, then every other function deferred.

    The rest are sorted by name and the search tool's description depends on the catalog
    only, so the same catalog and the same ``loaded`` give the same list, byte for byte.
    """
    by_name = {f.name: f for f in functions}
    first = [by_name[name] for name in dict.fromkeys(loaded) if name in by_name]
    chosen = {f.name for f in first}
    rest = sorted((f for f in functions if f.name not in chosen), key=lambda f: f.name)
    description = search_description(namespace, sorted(functions, key=lambda f: f.name))
    if format == "openai":
        return [
            openai.search_tool(description),
            *(openai.function_tool(f, deferred=False) for f in first),
            *(openai.function_tool(f, deferred=True) for f in rest),
        ]
    return [
        anthropic.search_tool(description),
        *(anthropic.tool(f, deferred=False) for f in first),
        *(anthropic.tool(f, deferred=True) for f in rest),
    ]


def search_item(format: Format, functions: Sequence[FunctionDef], *, call_id: str | None) -> dict[str, Any]:
    """What the host hands back to its API for a search call that found ``functions``.

    Raises:
        InvalidRequest: ``call_id`` is missing for the Anthropic format (a ``tool_result`` needs it).
    """
    if format == "openai":
        return openai.search_output(functions, call_id=call_id)
    if format == "anthropic":
        if call_id is None:
            raise InvalidRequest(
                "call_id: required with format 'anthropic' (the tool_use id to answer)", field="call_id"
            )
        return anthropic.search_result(functions, call_id=call_id)
    if format == "mcp":
        return mcp.search_result(functions)
    return mcp.plain_result(functions)
