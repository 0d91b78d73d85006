"""What each model API documents that it takes: tool names and how many tools a request holds.

A function the API would refuse is never handed to it in silence: it is left out of the list,
and the answer names it with the reason (``LeftOut``).

- OpenAI (Responses function tools, Chat Completions ``tools``) and Anthropic (Messages
  ``tools``): names match ``^[a-zA-Z0-9_-]{1,64}$``; a catalog name with a dot is left out.
- Anthropic's tool search: at most 10,000 tools in the catalog searched (the deferred ones).
- Chat Completions: at most 128 functions in ``tools``.
- MCP ``tools/list`` has no count limit, and its names take dots.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Literal

from router.catalog.functions import FunctionDef

API_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# Anthropic's tool search is a tool of the list by this name, which tool names being unique, no function can take.
SEARCH_TOOL = "tool_search"
MAX_DEFERRED = {"anthropic": 10_000}
CHAT_COMPLETIONS_TOOLS = 128
_APIS = {"openai": "OpenAI", "anthropic": "Anthropic"}


@dataclass(frozen=True)
class LeftOut:
    """A function left out of a tool list, and why."""

    name: str
    reason: str


def unnamed(format: str, name: str) -> LeftOut | None:
    """Why ``format``'s API refuses the tool name ``name``, or None when it takes it."""
    api = _APIS.get(format)
    if api is None or API_NAME.fullmatch(name):
        return None
    return LeftOut(name, f"{api} refuses the name: tool names must match {API_NAME.pattern}")


def unsearchable(format: str, name: str) -> LeftOut | None:
    """Why ``format``'s tool search cannot hand over ``name``: a name its API refuses, or its search tool's."""
    if format == "anthropic" and name == SEARCH_TOOL:
        return LeftOut(name, f"the search tool is named {SEARCH_TOOL!r}")
    return unnamed(format, name)


def named(format: str, functions: Sequence[FunctionDef]) -> tuple[list[FunctionDef], list[LeftOut]]:
    """The functions whose names ``format``'s API takes, and those left out."""
    return _split(functions, partial(unnamed, format))


def searchable(format: str, functions: Sequence[FunctionDef]) -> tuple[list[FunctionDef], list[LeftOut]]:
    """The functions ``format``'s tool search can hand over beside its search tool, and those left out."""
    return _split(functions, partial(unsearchable, format))


def _split(
    functions: Sequence[FunctionDef], refuse: Callable[[str], LeftOut | None]
) -> tuple[list[FunctionDef], list[LeftOut]]:
    kept: list[FunctionDef] = []
    left_out: list[LeftOut] = []
    for function in functions:
        refused = refuse(function.name)
        if refused is None:
            kept.append(function)
        else:
            left_out.append(refused)
    return kept, left_out


def capped(format: Literal["openai", "anthropic"], deferred: Sequence[FunctionDef]) -> tuple[int, list[LeftOut]]:
    """How many of ``deferred`` (in order) the API takes, and the rest left out."""
    most = MAX_DEFERRED.get(format)
    if most is None or len(deferred) <= most:
        return len(deferred), []
    reason = f"{_APIS[format]}'s tool search takes at most {most:,} deferred tools; load it to keep it"
    return most, [LeftOut(f.name, reason) for f in deferred[most:]]
