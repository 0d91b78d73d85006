"""MCP and plain shapes of found functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from router.catalog.functions import FunctionDef
from router.tools.openai import parameters

__all__ = ["bare", "plain_result", "search_result", "tool"]


def tool(function: FunctionDef) -> dict[str, Any]:
    """An MCP ``Tool`` (``name``, ``description``, ``inputSchema``)."""
    definition: dict[str, Any] = {"name": function.name}
    if function.description:
        definition["description"] = function.description
    definition["inputSchema"] = parameters(function)
    return definition


def search_result(functions: Sequence[FunctionDef]) -> dict[str, Any]:
    """The found functions as an MCP ``tools/list`` result."""
    return {"tools": [tool(f) for f in functions]}


def bare(function: FunctionDef) -> dict[str, Any]:
    """The bare shape: ``name``, ``description``, ``parameters``."""
    return {"name": function.name, "description": function.description, "parameters": parameters(function)}


def plain_result(functions: Sequence[FunctionDef]) -> dict[str, Any]:
    """The found functions in the bare shape."""
    return {"functions": [bare(f) for f in functions]}
