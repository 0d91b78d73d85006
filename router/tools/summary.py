"""The search tool's description: what a catalog holds, read from its functions' names.

A model that sees only the search tool (Anthropic withholds deferred tools entirely) must
learn from its description what it may find, so the description names the catalog, how many
functions it holds and the things they act on, most common first. It is derived from the
catalog alone and deterministic, so the tool list stays byte-stable for the prompt cache.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from router.catalog.functions import FunctionDef

__all__ = ["SEARCH_PARAMETERS", "SEARCH_TOOL", "search_description", "topics"]

SEARCH_TOOL = "tool_search"
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
TOPICS = 12
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Verbs and filler every catalog shares: they say nothing about what this one holds.
_COMMON = frozenset({
    "a", "add", "all", "an", "and", "apply", "by", "cancel", "check", "create", "current", "delete", "details",
    "do", "fetch", "find", "for", "from", "get", "info", "in", "is", "list", "lookup", "make", "new", "of", "on",
    "or", "post", "put", "read", "remove", "retrieve", "run", "search", "send", "set", "show", "the", "to",
    "update", "v", "with", "write",
})  # fmt: skip


def _words(name: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(name)]


def topics(functions: Sequence[FunctionDef], *, limit: int = TOPICS) -> list[str]:
    """The words of the functions' names that say what they act on, most functions first."""
    named = [{w for w in _words(f.name) if w not in _COMMON and not w.isdigit() and len(w) > 1} for f in functions]
    seen = set().union(*named) if named else set()
    counts: Counter[str] = Counter()
    for words in named:
        # A plural counts as its singular when the catalog uses that too ("flights", "flight").
        counts.update({w[:-1] if w.endswith("s") and w[:-1] in seen else w for w in words})
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
