"""Tool retrieval for langgraph-bigtool agents through the tool router.

::

    from langgraph_bigtool import create_agent
    from router.client import RouterClient
    from router.integrations.langgraph import retrieve_tools, tool_definitions

    registry = {tool.name: tool for tool in all_my_tools}
    with RouterClient("http://127.0.0.1:8000") as router:
        router.put_catalog("my-agent", tool_definitions(registry))
    retrieve, aretrieve = retrieve_tools("my-agent", registry=registry, limit=3)
    agent = create_agent(llm, registry, retrieve_tools_function=retrieve,
                         retrieve_tools_coroutine=aretrieve).compile()

The agent starts with the retrieval tool only; each retrieval is a router search (hybrid
scoring, usage learned from stored sessions, the session's context when a ``session_id`` is
given) and returns the registry ids of the tools found, which bigtool then binds to the model.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

try:
    from langchain_core.tools import BaseTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        "router.integrations.langgraph needs langgraph-bigtool: pip install 'tool-router[langgraph]'"
    ) from exc

from router.client import AsyncRouterClient, RouterClient
from router.client._calls import DEFAULT_URL

__all__ = ["RouterToolRetriever", "retrieve_tools", "tool_definitions"]

log = logging.getLogger("router.integrations.langgraph")
# The most functions one search may ask for (the router's bound).
MAX_FUNCTIONS = 128


def _tool_name(tool: Any) -> str:
    return str(tool.name if isinstance(tool, BaseTool) else tool.__name__)


def tool_definitions(registry: Mapping[str, Any] | Sequence[Any]) -> list[dict[str, Any]]:
    """OpenAI function definitions of a bigtool registry's tools (or of a list of tools), to register as a catalog."""
    tools = registry.values() if isinstance(registry, Mapping) else registry
    return [convert_to_openai_tool(tool) for tool in tools]


class RouterToolRetriever:
    """Finds an agent's tools through the router (``retrieve_tools`` wraps it for bigtool).

    Args:
        namespace: the catalog holding the registry's tools, or several searched together.
        registry: bigtool's ``tool_registry`` (id to tool): found functions are answered as
            its ids. A catalog function it does not hold is passed over with a warning, and
            the search asks for more (up to 128), so the best functions it holds still come
            back. Without one, the ids are the function names.
        limit: tools returned per retrieval (the router's default is 3).
        session_id: the conversation, whose stored messages add context to each retrieval.
        user_id: the user, as for a route.
        client: the blocking client used by ``retrieve_tools``; it must stay open while the agent
            runs. Without it, each retrieval opens and closes its own, at ``url``.
        async_client: the asyncio client used by ``aretrieve_tools``, as ``client``. Without it,
            each retrieval opens its own, at ``client``'s address when given, else at ``url``: a
            client serves one event loop, and ``asyncio.run`` per request makes a new loop each time.
        url: where the router listens, for the clients made here.
        api_key: their API key.
    """

    def __init__(
        self,
        namespace: str | Sequence[str] = "default",
        *,
        registry: Mapping[str, Any] | None = None,
        limit: int | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        client: RouterClient | None = None,
        async_client: AsyncRouterClient | None = None,
        url: str = DEFAULT_URL,
        api_key: str | None = None,
    ) -> None:
        self.namespace = namespace if isinstance(namespace, str) else list(namespace)
        self.ids = None if registry is None else {_tool_name(tool): key for key, tool in registry.items()}
        self.limit = limit
        self.session_id = session_id
        self.user_id = user_id
        self._client, self._async_client = client, async_client
        self._url, self._api_key = url, api_key
        self._headers: dict[str, str] = {}
        if client is not None and async_client is None:  # the asyncio clients made here go where it goes
            self._url, self._headers = client.base_url, client.headers

    def _ids(self, names: Sequence[str], wanted: int) -> tuple[list[str], bool]:
        """The registry ids of ``names``, at most ``wanted``, and whether a wider search may find more."""
        if self.ids is None:
            return list(names), False
        unknown = [name for name in names if name not in self.ids]
        if unknown:
            log.warning("the catalog has functions the registry does not hold, passed over: %s", unknown)
        ids = [self.ids[name] for name in names if name in self.ids][:wanted]
        # A search that answered fewer than it was asked for has nothing more to find.
        return ids, bool(unknown) and len(ids) < wanted <= len(names) < MAX_FUNCTIONS

    def _options(self, wider: bool = False) -> dict[str, Any]:
        wanted = MAX_FUNCTIONS if wider else self.limit
        return {"format": "plain", "max_functions": wanted, "session_id": self.session_id, "user_id": self.user_id}

    def search(self, query: str) -> list[str]:
        """The registry ids of the tools found for ``query``, best first."""
        if self._client is not None:
            return self._search(self._client, query)
        with RouterClient(self._url, api_key=self._api_key) as client:
            return self._search(client, query)

    def _search(self, client: RouterClient, query: str) -> list[str]:
        names = client.tool_search(self.namespace, query, **self._options()).names
        wanted = self.limit or len(names)
        ids, short = self._ids(names, wanted)
        if short:
            ids, _ = self._ids(client.tool_search(self.namespace, query, **self._options(True)).names, wanted)
        return ids

    async def asearch(self, query: str) -> list[str]:
        """``search``, awaited."""
        if self._async_client is not None:
            return await self._asearch(self._async_client, query)
        async with AsyncRouterClient(self._url, api_key=self._api_key, headers=self._headers) as client:
            return await self._asearch(client, query)

    async def _asearch(self, client: AsyncRouterClient, query: str) -> list[str]:
        names = (await client.tool_search(self.namespace, query, **self._options())).names
        wanted = self.limit or len(names)
        ids, short = self._ids(names, wanted)
        if short:
            ids, _ = self._ids((await client.tool_search(self.namespace, query, **self._options(True))).names, wanted)
        return ids


def retrieve_tools(
    namespace: str | Sequence[str] = "default",
    *,
    registry: Mapping[str, Any] | None = None,
    limit: int | None = None,
    session_id: str | None = None,
    user_id: str | None = None,
    client: RouterClient | None = None,
    async_client: AsyncRouterClient | None = None,
    url: str = DEFAULT_URL,
    api_key: str | None = None,
) -> tuple[Callable[[str], list[str]], Callable[[str], Awaitable[list[str]]]]:
    """The ``retrieve_tools_function`` and ``retrieve_tools_coroutine`` of ``langgraph_bigtool.create_agent``.

    Both search ``namespace`` through the router and return registry ids; see
    ``RouterToolRetriever`` for the arguments. Both are named ``retrieve_tools``, the name
    of the tool the model calls, whichever of the two bigtool is given.
    """
    retriever = RouterToolRetriever(
        namespace,
        registry=registry,
        limit=limit,
        session_id=session_id,
        user_id=user_id,
        client=client,
        async_client=async_client,
        url=url,
        api_key=api_key,
    )

    def retrieve_tools(query: str) -> list[str]:
        """Retrieve the tools to use, given a search query saying what needs to be done."""
        return retriever.search(query)

    async def aretrieve_tools(query: str) -> list[str]:
        """Retrieve the tools to use, given a search query saying what needs to be done."""
        return await retriever.asearch(query)

    aretrieve_tools.__name__ = aretrieve_tools.__qualname__ = "retrieve_tools"
    return retrieve_tools, aretrieve_tools
