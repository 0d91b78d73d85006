"""Anthropic Messages API shapes: tools with ``defer_loading``, the custom search tool and its ``tool_result``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from router.catalog.functions import FunctionDef
from router.tools.openai import parameters
from router.tools.summary import SEARCH_PARAMETERS, SEARCH_TOOL

__all__ = ["search_result", "search_tool", "tool"]

NOTHING_FOUND = "No function of the catalog matches; say differently what you need to do."


def tool(function: FunctionDef, *, deferred: bool) -> dict[str, Any]:
    """A custom tool (``ToolParam``), marked ``defer_loading`` when deferred."""
    definition: dict[str, Any] = {"name": function.name}
    if function.description:
        definition["description"] = function.description
    definition["input_schema"] = parameters(function)
    if deferred:
        definition["defer_loading"] = True
    return definition


def search_tool(description: str) -> dict[str, Any]:
    """The search tool the host executes: a custom tool whose results are ``tool_reference`` blocks."""
    return {"name": SEARCH_TOOL, "description": description, "input_schema": SEARCH_PARAMETERS}


def search_result(functions: Sequence[FunctionDef], *, call_id: str) -> dict[str, Any]:
    """The ``tool_result`` block answering the search tool's ``tool_use`` ``call_id``.

    Its content is one ``tool_reference`` per function found (the API then loads those
    deferred tools); a text block says so when nothing was found.
    """
    content: list[dict[str, Any]] = [{"type": "tool_reference", "tool_name": f.name} for f in functions]
    if not content:
        content = [{"type": "text", "text": NOTHING_FOUND}]
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}
