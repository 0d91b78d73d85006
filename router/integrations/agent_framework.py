"""Agent Framework (``agent-framework-core`` 1.x) context provider backed by the tool router.

::

    from agent_framework import Agent
    from router.client import AsyncRouterClient
    from router.integrations.agent_framework import RouterContextProvider

    router = AsyncRouterClient("http://127.0.0.1:8000")
    agent = Agent(client=chat_client, tools=[...all the agent's functions...],
                  context_providers=[RouterContextProvider(router, namespace="travel")])

Before each run the provider routes the run's input through the sidecar, then advertises
only the routed functions: a chat middleware it adds for the run drops, from the tools sent
to the chat client, every tool the catalog knows but did not route (tools the catalog does
not know stay). When the route chose only functions the agent lacks, the best of the agent's
own are advertised instead (routed again, wider), with a warning. It adds the session's
history and the relevant memories as messages attributed to its ``source_id``. After a
successful run it posts the run's input and response messages, tool calls and results
included, to the session. The session id is the ``AgentSession``'s; nothing about a session is
kept on the provider. When the sidecar cannot be reached the run goes on with every tool (fail
open) and a warning is logged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, Literal

try:
    from agent_framework import (
        AgentSession,
        ChatMiddlewareLayer,
        ContextProvider,
        FunctionTool,
        HistoryProvider,
        InMemoryHistoryProvider,
        Message,
        SessionContext,
        SupportsAgentRun,
        tool,
    )
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        "router.integrations.agent_framework needs agent-framework-core: pip install 'tool-router[agent-framework]'"
    ) from exc

from router.client import AsyncRouterClient, MemoriesDeleted, RouterClientError, StoredMemory
from router.integrations._af import RoutedTools, from_router, search_tool, to_router, trouble, widened

__all__ = ["RouterContextProvider", "tool_definitions"]

log = logging.getLogger("router.integrations.agent_framework")


class RouterContextProvider(ContextProvider):
    """Advertise only the functions that matter for each run; bring back history and memories.

    Args:
        client: the sidecar's client (the caller opens and closes it).
        namespace: the catalog to route in.
        source_id: attributes this provider's messages and middleware.
        user_id: whose memories come back, for every session; a session's own
            (``bind_user``) takes precedence.
        max_functions: functions advertised per run (the sidecar's default is 3).
        recent_messages: earlier session messages that add routing context (sidecar default 2).
        min_score: catalog functions scoring below this are not advertised.
        pinned: catalog functions advertised on every run.
        load_history: add the session's history from the sidecar: True, False, or "auto"
            (only when no other history provider of the agent will load any: the
            ``InMemoryHistoryProvider`` the agent adds by itself counts once it holds messages).
        history_messages: how many history messages to add (sidecar default 20).
        load_memories: add what the user said before that matters for this run.
        store_messages: post each run's messages to the session after it succeeds.
        store_context_messages: also post messages other non-history providers added.
        catalog_ttl: seconds the catalog's function names are kept before being read again.
        search_tool: also give the run a ``tool_search`` tool whose calls go to the router's
            search: the functions it finds are advertised from the next model call of the run
            on, so the model starts with the routed functions and can still reach the rest.
        search_functions: functions one search loads (the sidecar's default is 3), among those the agent has.
    """

    DEFAULT_SOURCE_ID: ClassVar[str] = "tool_router"
    MEMORY_ROLE: ClassVar[str] = "user"

    def __init__(
        self,
        client: AsyncRouterClient,
        *,
        namespace: str = "default",
        source_id: str = DEFAULT_SOURCE_ID,
        user_id: str | None = None,
        max_functions: int | None = None,
        recent_messages: int | None = None,
        min_score: float | None = None,
        pinned: Sequence[str] = (),
        load_history: bool | Literal["auto"] = "auto",
        history_messages: int | None = None,
        load_memories: bool = True,
        store_messages: bool = True,
        store_context_messages: bool = False,
        catalog_ttl: float = 60.0,
        search_tool: bool = False,
        search_functions: int | None = None,
    ) -> None:
        if not isinstance(client, AsyncRouterClient):
            raise TypeError(
                f"RouterContextProvider needs an AsyncRouterClient (Agent Framework runs on asyncio), "
                f"not {type(client).__name__}"
            )
        super().__init__(source_id)
        self.client = client
        self.namespace = namespace
        self.user_id = user_id
        self.max_functions = max_functions
        self.recent_messages = recent_messages
        self.min_score = min_score
        self.pinned = tuple(pinned)
        self.load_history = load_history
        self.history_messages = history_messages
        self.load_memories = load_memories
        self.store_messages = store_messages
        self.store_context_messages = store_context_messages
        self.catalog_ttl = catalog_ttl
        self.search_tool = search_tool
        self.search_functions = search_functions
        # The router's summary of the catalog, for the search tool's description: catalog state too.
        self._search_description: tuple[float, str] | None = None
        # The catalog's names, shared by every session: catalog state, not session state.
        self._catalog: tuple[float, frozenset[str]] | None = None
        self._warned_no_middleware = False

    def bind_user(self, session: AgentSession, user_id: str) -> None:
        """Route and store this session's runs for ``user_id`` (kept in the session's state)."""
        session.state.setdefault(self.source_id, {})["user_id"] = user_id

    def _whose(self, session: AgentSession | None, user_id: str | None) -> str:
        if user_id is not None:
            return user_id
        state = session.state.get(self.source_id, {}) if session is not None else {}
        whose = state.get("user_id", self.user_id) if isinstance(state, Mapping) else self.user_id
        if whose is None:
            raise ValueError("no user: pass user_id, bind_user the session, or give the provider a user_id")
        return str(whose)

    async def list_memories(
        self, *, user_id: str | None = None, session: AgentSession | None = None, namespace: str | None = None
    ) -> list[StoredMemory]:
        """What the sidecar remembers of a user (the session's bound user, else the provider's).

        Args:
            user_id: the user; the session's bound user or the provider's ``user_id`` when None.
            session: the session whose bound user is meant.
            namespace: only the memories stored in this namespace.
        """
        return await self.client.list_memories(self._whose(session, user_id), namespace=namespace)

    async def forget_memory(
        self, memory_id: str, *, user_id: str | None = None, session: AgentSession | None = None
    ) -> MemoriesDeleted:
        """Forget one memory of the user (``NotFoundError`` when unknown)."""
        return await self.client.delete_memory(self._whose(session, user_id), memory_id)

    async def forget_memories(
        self, *, user_id: str | None = None, session: AgentSession | None = None
    ) -> MemoriesDeleted:
        """Forget everything the sidecar remembers of the user, in every namespace."""
        return await self.client.delete_memories(self._whose(session, user_id))

    async def before_run(
        self, *, agent: SupportsAgentRun, session: AgentSession, context: SessionContext, state: dict[str, Any]
    ) -> None:
        """Route the run's input; restrict its tools; add history and memories."""
        messages = to_router(context.input_messages, source="external")
        if not any(m["role"] == "user" and m.get("content") for m in messages):
            return  # nothing to route on (a continuation): every tool stays
        history = self._wants_history(agent, session)
        try:
            routed, known = await asyncio.gather(
                self.client.route(
                    self.namespace,
                    [{"role": m["role"], "content": m.get("content")} for m in messages],
                    session_id=session.session_id,
                    user_id=state.get("user_id", self.user_id),
                    max_functions=self.max_functions,
                    recent_messages=self.recent_messages,
                    min_score=self.min_score,
                    pinned=self.pinned,
                    history_messages=None if history else 0,
                ),
                self._catalog_names(),
            )
        except RouterClientError as exc:
            log.warning("%s, advertising every tool: %s", trouble(exc), exc)
            return
        context.metadata[self.source_id] = {"functions": routed.names, "known": len(known)}
        advertised = set(routed.names)
        client = getattr(agent, "client", None)
        if client is not None and not isinstance(client, ChatMiddlewareLayer) and not self._warned_no_middleware:
            self._warned_no_middleware = True
            log.warning("%s has no chat middleware layer: every tool is advertised", type(client).__name__)
        # Routes answer functions unless min_score removed them all: those are then not widened.
        user_id = state.get("user_id", self.user_id)
        widen = (
            partial(widened, self, messages, session.session_id, user_id, len(routed.names)) if routed.names else None
        )
        middleware = RoutedTools(advertised, known, widen)
        context.extend_middleware(self.source_id, [middleware])
        if self.search_tool:
            search = await search_tool(self, middleware, session_id=session.session_id, user_id=state.get("user_id"))
            context.extend_tools(self.source_id, [search])
        if history and routed.history:
            context.extend_messages(self, from_router(routed.history))
        if self.load_memories and routed.memory_context:
            context.extend_messages(self, [Message(self.MEMORY_ROLE, [routed.memory_context])])

    async def after_run(
        self, *, agent: SupportsAgentRun, session: AgentSession, context: SessionContext, state: dict[str, Any]
    ) -> None:
        """Post the run's messages, tool calls and results included, to the session."""
        if not self.store_messages or context.response is None:
            return
        messages: list[dict[str, Any]] = []
        if self.store_context_messages:
            skip = {self.source_id} | {
                p.source_id for p in getattr(agent, "context_providers", ()) if isinstance(p, HistoryProvider)
            }
            for source_id, added in context.context_messages.items():
                if source_id not in skip:
                    messages += to_router(added, source="context_provider")
        messages += to_router(context.input_messages, source="external")
        messages += to_router(context.response.messages, source="external")
        if not messages:
            return
        try:
            await self.client.add_messages(
                session.session_id, messages, user_id=state.get("user_id", self.user_id), namespace=self.namespace
            )
        except RouterClientError as exc:
            log.warning("%s, the run's messages were not stored: %s", trouble(exc), exc)

    async def _catalog_names(self) -> frozenset[str]:
        cached = self._catalog
        if cached is not None and time.monotonic() - cached[0] < self.catalog_ttl:
            return cached[1]
        names = frozenset((await self.client.get_catalog(self.namespace)).names)
        self._catalog = (time.monotonic(), names)
        return names

    def _wants_history(self, agent: SupportsAgentRun, session: AgentSession) -> bool:
        if self.load_history != "auto":
            return self.load_history
        if session.service_session_id is not None:
            return False  # the service keeps the conversation
        for provider in getattr(agent, "context_providers", ()):
            if provider is self or not isinstance(provider, HistoryProvider) or not provider.load_messages:
                continue
            own = session.state.get(provider.source_id)
            if isinstance(provider, InMemoryHistoryProvider) and not (isinstance(own, Mapping) and own.get("messages")):
                continue
            return False
        return True


def tool_definitions(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """OpenAI function definitions of an agent's tools, to register them as a catalog.

    Args:
        tools: ``FunctionTool`` objects, plain functions (as ``@tool`` would wrap them) or
            definitions already in the OpenAI, bare or MCP shape.
    """
    definitions: list[dict[str, Any]] = []
    for item in tools:
        if isinstance(item, Mapping):
            definitions.append(dict(item))
        elif isinstance(item, FunctionTool):
            definitions.append(item.to_json_schema_spec())
        elif callable(item):
            definitions.append(tool(item).to_json_schema_spec())
        else:
            raise TypeError(f"tools[{len(definitions)}]: {type(item).__name__} is not a function or definition")
    return definitions
