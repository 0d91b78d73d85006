"""The blocking client."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from router.client import _calls as calls
from router.client._calls import DEFAULT_URL, Messages
from router.client._catalog_models import (
    Catalog,
    CatalogChanges,
    CatalogInfo,
    CatalogTools,
    ListFormat,
    SearchFormat,
    ToolSearchResult,
)
from router.client._connection import Connection
from router.client._example_models import ExamplesDeleted, UsageExamples
from router.client._miss_models import Misses
from router.client._models import RouteResult
from router.client._retry import RetryPolicy
from router.client._session_models import MemoriesDeleted, SessionDeleted, StoredMemory, StoredMessages


class RouterClient(Connection):
    """A client of the tool router's HTTP API.

    Args:
        base_url: where the sidecar listens.
        api_key: sent as ``Authorization: Bearer <api_key>`` (a key of the sidecar's ``ROUTER_API_KEYS``).
        timeout: seconds for each request (or an ``httpx.Timeout``); retries come on top.
        retry: when and how requests are tried again (``RetryPolicy(attempts=1)`` disables it).
        headers: extra headers sent with every request.
        transport: an ``httpx`` transport to use instead of the network (``httpx.MockTransport`` in tests).

    Example:
        >>> with RouterClient("http://127.0.0.1:8000") as router:  # doctest: +SKIP
        ...     result = router.route("travel", "Find me a flight to Rome")
        ...     print(result.names)
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        http = httpx.Client(
            base_url=base_url, timeout=timeout, headers=calls.headers(api_key, headers), transport=transport
        )
        super().__init__(http, retry)

    def route(
        self,
        namespace: str,
        messages: Messages,
        *,
        session_id: str | None = None,
        user_id: str | None = None,
        max_functions: int | None = None,
        recent_messages: int | None = None,
        min_score: float | None = None,
        pinned: Sequence[str] = (),
        history_messages: int | None = None,
        explain: bool = False,
        defer_rest: bool = False,
        format: ListFormat | None = None,
    ) -> RouteResult:
        """The functions that matter for a turn, with the session's history and memories.

        Args:
            namespace: the catalog to route in.
            messages: the turn's new messages (``{"role", "content"}``), or one user message's text.
            session_id: the conversation; its recent messages add context and come back as history.
            user_id: whose memories come back.
            max_functions: how many functions to return (the sidecar's default is 3).
            recent_messages: earlier session messages that add context (default 2).
            min_score: drop functions scoring below this.
            pinned: functions always included, beside ``max_functions``.
            history_messages: how many session messages come back in ``history`` (default 20).
            explain: add to each function the parts of its score (``RoutedFunction.explanation``).
            defer_rest: ``tools`` becomes the whole catalog as an API's tools array: the routed
                functions loaded, every other one deferred, and the search tool (see ``tools``).
            format: the API of ``tools``: ``openai`` (the default: Chat Completions, or Responses with
                ``defer_rest``) or ``anthropic``.

        Raises:
            NotFoundError: no catalog of that namespace.
            ValidationError: a field is out of range, or no user message has any text.
            UnavailableError: the sidecar is starting or its storage is unreachable (after retries).
            TransportError: the sidecar could not be reached (after retries).
        """
        return self._send(
            calls.route(
                namespace,
                messages,
                session_id=session_id,
                user_id=user_id,
                max_functions=max_functions,
                recent_messages=recent_messages,
                min_score=min_score,
                pinned=pinned,
                history_messages=history_messages,
                explain=explain,
                defer_rest=defer_rest,
                format=format,
            )
        )

    def tool_search(
        self,
        namespace: str | Sequence[str],
        query: str,
        *,
        format: SearchFormat = "openai",
        call_id: str | None = None,
        max_functions: int | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
    ) -> ToolSearchResult:
        """Answer a model's search call through the router's search (a route of ``query``).

        Args:
            namespace: the catalog to search, or several searched together.
            query: what the model searched for (the search call's ``query`` argument).
            format: the model's API: ``openai`` (a ``tool_search_output`` item), ``anthropic``
                (a ``tool_result`` block of ``tool_reference`` blocks), ``mcp`` or ``plain``.
            call_id: the search call's id: the ``tool_search_call``'s ``call_id`` (OpenAI), the
                ``tool_use`` block's ``id`` (Anthropic, required).
            max_functions: how many functions to find (the sidecar's default is 3).
            session_id: the conversation, whose recent messages add context.
            user_id: the user, as for a route.

        Returns:
            ``item`` to hand back to the API unchanged, and the ``functions`` found with their scores.

        Raises:
            NotFoundError: no catalog of that namespace.
            ValidationError: a field is out of range (or ``call_id`` is missing for Anthropic).
        """
        return self._send(
            calls.tool_search(
                namespace,
                query,
                format=format,
                call_id=call_id,
                max_functions=max_functions,
                session_id=session_id,
                user_id=user_id,
            )
        )

    def tools(self, namespace: str, *, format: ListFormat = "openai", load: Sequence[str] = ()) -> CatalogTools:
        """A catalog as one API's ``tools`` array: the search tool first, then the catalog's pinned
        functions and those of ``load``, then every other function deferred (``defer_loading``).

        The same catalog gives the same list, so the provider's prompt cache holds.

        Args:
            namespace: the catalog.
            format: ``openai`` (Responses API) or ``anthropic`` (Messages API).
            load: functions to load from the start, besides the pinned ones.
        """
        return self._send(calls.tools(namespace, format=format, load=load))

    def add_messages(
        self,
        session_id: str,
        messages: Messages,
        *,
        user_id: str | None = None,
        namespace: str | None = None,
    ) -> StoredMessages:
        """Store what a run produced in the session (history, memories, tool usage).

        Messages are OpenAI-shaped (``role``, ``content``, ``tool_calls``, ``tool_call_id``),
        with an optional ``source``: ``external`` (default), ``history`` (not stored again) or
        ``context_provider``. A message with an ``id`` is stored once however often it is
        sent, which makes retries safe: give ids when a duplicate would matter.

        Args:
            session_id: the conversation.
            messages: the run's messages, or one user message's text.
            user_id: scopes the memories taken from these messages to the user.
            namespace: the catalog the session routes in (memories are kept per namespace).
        """
        return self._send(calls.add_messages(session_id, messages, user_id=user_id, namespace=namespace))

    def get_messages(self, session_id: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        """A session's stored messages, oldest first (the last ``limit`` when given; empty for an unknown session)."""
        return self._send(calls.get_messages(session_id, limit=limit))

    def delete_session(self, session_id: str) -> SessionDeleted:
        """Forget a session: its history and the memories scoped to it."""
        return self._send(calls.delete_session(session_id))

    def list_memories(
        self, user_id: str, *, namespace: str | None = None, superseded: bool = False
    ) -> list[StoredMemory]:
        """A user's memories, oldest first: text, namespace (``*``: every one), when, from which session.

        Args:
            user_id: the user the memories were stored for.
            namespace: only the memories stored in this namespace.
            superseded: also the memories that were replaced or have expired (see their ``status``).
        """
        return self._send(calls.list_memories(user_id, namespace=namespace, superseded=superseded))

    def delete_memory(self, user_id: str, memory_id: str) -> MemoriesDeleted:
        """Forget one memory of a user (``NotFoundError`` when the user has no memory of that id)."""
        return self._send(calls.delete_memory(user_id, memory_id))

    def delete_memories(self, user_id: str, *, namespace: str | None = None) -> MemoriesDeleted:
        """Forget every memory of a user, in every namespace (in ``namespace`` only, when given)."""
        return self._send(calls.delete_memories(user_id, namespace=namespace))

    def list_examples(
        self, namespace: str, *, function: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> UsageExamples:
        """A page of a namespace's usage examples, oldest first.

        ``function`` lists one function's (``NotFoundError`` when the catalog holds no such function).
        """
        return self._send(calls.list_examples(namespace, function=function, limit=limit, cursor=cursor))

    def delete_example(self, namespace: str, example_id: str) -> ExamplesDeleted:
        """Delete one usage example (``NotFoundError`` when the namespace holds none of that id)."""
        return self._send(calls.delete_example(namespace, example_id))

    def delete_examples(self, namespace: str, *, function: str | None = None) -> ExamplesDeleted:
        """Delete a namespace's usage examples and the companions they taught.

        ``function`` deletes one function's (``NotFoundError`` when the catalog holds no such function).
        """
        return self._send(calls.delete_examples(namespace, function=function))

    def misses(self, namespace: str, *, limit: int | None = None) -> Misses:
        """How often the model called a function its turn had not been routed, and the latest such calls.

        Calls are checked when their run is stored (``add_messages``) against what the session's
        turns were routed, so only turns routed (or searched) with a ``session_id`` count.

        Args:
            namespace: the catalog.
            limit: how many of the latest missed calls to list, 0 to 100 (the sidecar's default is 20).

        Raises:
            NotFoundError: no catalog of that namespace.
            ValidationError: ``limit`` is out of range.
        """
        return self._send(calls.misses(namespace, limit=limit))

    def list_catalogs(self) -> list[CatalogInfo]:
        """Every known catalog."""
        return self._send(calls.list_catalogs())

    def get_catalog(self, namespace: str) -> Catalog:
        """A catalog with its function definitions, as registered (``NotFoundError`` if unknown)."""
        return self._send(calls.get_catalog(namespace))

    def put_catalog(
        self,
        namespace: str,
        functions: Sequence[Mapping[str, Any]],
        *,
        pinned: Sequence[str] = (),
        wait: float | None = None,
    ) -> CatalogChanges:
        """Replace a catalog and reconcile it now; only new or changed functions are embedded.

        Args:
            namespace: the catalog's namespace.
            functions: definitions in the OpenAI, bare or MCP shape, kept verbatim.
            pinned: names always returned with a route.
            wait: seconds to wait for the answer, which comes once what changed is embedded
                (default 600, or the client's timeout when longer).
        """
        return self._send(calls.put_catalog(namespace, functions, pinned=pinned, wait=wait))

    def delete_catalog(self, namespace: str) -> CatalogChanges:
        """Delete a catalog and all its functions (``NotFoundError`` if unknown)."""
        return self._send(calls.delete_catalog(namespace))
