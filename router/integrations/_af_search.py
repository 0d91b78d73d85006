"""The Agent Framework provider's search tool: a model's search goes to the router's ``/v1/tool_search``."""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from agent_framework import FunctionTool

from router.client import RouterClientError

if TYPE_CHECKING:
    from router.integrations.agent_framework import RouterContextProvider

log = logging.getLogger("router.integrations.agent_framework")

SEARCH_TOOL = "tool_search"
PARAMETERS = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What you need to do, in plain words"},
    },
    "required": ["query"],
}


async def search_tool(
    provider: RouterContextProvider, advertised: set[str], *, session_id: str | None, user_id: str | None
) -> FunctionTool:
    """One run's ``tool_search`` tool: what a search finds joins ``advertised``, shared with the run's middleware.

    Searches carry the session (whose messages add context) and the user of the session.
    """

    async def tool_search(query: str) -> str:
        try:
            found = await provider.client.tool_search(
                provider.namespace,
                query,
                format="plain",
                max_functions=provider.search_functions,
                session_id=session_id,
                user_id=user_id or provider.user_id,
            )
        except RouterClientError as exc:
            log.warning("tool router unavailable, the search found nothing: %s", exc)
            return json.dumps({"error": f"the tool search is unavailable: {exc}"})
        advertised.update(found.names)
        functions = [{"name": f.name, "description": f.description} for f in found.functions]
        return json.dumps({"loaded": functions, "note": "these functions can be called now"}, ensure_ascii=False)

    description = await _description(provider)
    tool: Any = FunctionTool(name=SEARCH_TOOL, description=description, func=tool_search, input_model=PARAMETERS)
    return tool  # type: ignore[no-any-return]


async def _description(provider: RouterContextProvider) -> str:
    """The router's summary of the catalog, kept for ``catalog_ttl`` (a generic one when the router cannot say)."""
    cached = provider._search_description
    if cached is not None and time.monotonic() - cached[0] < provider.catalog_ttl:
        return cached[1]
    try:
        listed = await provider.client.tools(provider.namespace, format="anthropic")
        text = str(listed.tools[0]["description"])
    except (RouterClientError, IndexError, KeyError):
        return f"Search the {provider.namespace!r} catalog for the functions a task needs, and load them."
    provider._search_description = (time.monotonic(), text)
    return text
