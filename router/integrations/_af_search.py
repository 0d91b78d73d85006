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


class RouterSearch:
    """One run's search tool: what it finds joins the functions advertised to the model.

    Args:
        provider: the context provider (its client, namespace and limits).
        advertised: the run's advertised function names, shared with its chat middleware.
        session_id: the session, whose messages add context to searches.
        user_id: the user of the session.
        descriptions: the provider's cache of catalog summaries (namespace to time read and text).
    """

    def __init__(
        self,
        provider: RouterContextProvider,
        advertised: set[str],
        *,
        session_id: str | None,
        user_id: str | None,
        descriptions: dict[str, tuple[float, str]],
    ) -> None:
        self.provider = provider
        self.descriptions = descriptions
        self.advertised = advertised
        self.session_id = session_id
        self.user_id = user_id

    async def description(self) -> str:
        """The router's summary of the catalog (a generic one when the router cannot say)."""
        key = self.provider.namespace
        cached = self.descriptions.get(key)
        if cached is not None and time.monotonic() - cached[0] < self.provider.catalog_ttl:
            return cached[1]
        try:
            listed = await self.provider.client.tools(self.provider.namespace, format="anthropic")
            text = str(listed.tools[0]["description"])
        except (RouterClientError, IndexError, KeyError):
            return f"Search the {self.provider.namespace!r} catalog for the functions a task needs, and load them."
        self.descriptions[key] = (time.monotonic(), text)
        return text

    async def search(self, query: str) -> str:
        """Search the catalog; the functions found are advertised from the next model call on."""
        provider = self.provider
        try:
            found = await provider.client.tool_search(
                provider.namespace,
                query,
                format="plain",
                max_functions=provider.search_functions,
                session_id=self.session_id,
                user_id=self.user_id or provider.user_id,
            )
        except RouterClientError as exc:
            log.warning("tool router unavailable, the search found nothing: %s", exc)
            return json.dumps({"error": f"the tool search is unavailable: {exc}"})
        self.advertised.update(found.names)
        functions = [{"name": f.name, "description": f.description} for f in found.functions]
        return json.dumps({"loaded": functions, "note": "these functions can be called now"}, ensure_ascii=False)

    async def tool(self) -> FunctionTool:
        """The ``tool_search`` function tool of the run."""

        async def tool_search(query: str) -> str:
            return await self.search(query)

        tool: Any = FunctionTool(
            name=SEARCH_TOOL, description=await self.description(), func=tool_search, input_model=PARAMETERS
        )
        return tool  # type: ignore[no-any-return]
