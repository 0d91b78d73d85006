"""OpenAI Responses API shapes: function tools, the client-executed ``tool_search`` tool and its output."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from router.catalog.functions import FunctionDef
from router.tools.summary import SEARCH_PARAMETERS

__all__ = ["function_tool", "search_output", "search_tool"]


def _strict(function: FunctionDef) -> bool:
    inner = function.definition.get("function") if function.shape == "openai" else function.definition
    strict = inner.get("strict") if isinstance(inner, Mapping) else None
    return strict if isinstance(strict, bool) else False


def parameters(function: FunctionDef) -> dict[str, Any]:
    """The function's JSON schema, always an object schema."""
    return {"type": "object", **function.parameters}


def function_tool(function: FunctionDef, *, deferred: bool) -> dict[str, Any]:
    """A Responses function tool (``FunctionToolParam``), marked ``defer_loading`` when deferred."""
    tool: dict[str, Any] = {"type": "function", "name": function.name}
    if function.description:
        tool["description"] = function.description
    tool["parameters"] = parameters(function)
    tool["strict"] = _strict(function)
    if deferred:
        tool["defer_loading"] = True
    return tool


def search_tool(description: str) -> dict[str, Any]:
    """The ``tool_search`` tool the host executes (``ToolSearchToolParam`` with ``execution: client``)."""
    return {"type": "tool_search", "execution": "client", "description": description, "parameters": SEARCH_PARAMETERS}


def search_output(functions: Sequence[FunctionDef], *, call_id: str | None) -> dict[str, Any]:
    """The ``tool_search_output`` item answering a ``tool_search_call``: the found tools, as the list defers them."""
    item: dict[str, Any] = {"type": "tool_search_output", "execution": "client", "status": "completed"}
    if call_id is not None:
        item["call_id"] = call_id
    item["tools"] = [function_tool(f, deferred=True) for f in functions]
    return item
