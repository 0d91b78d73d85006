"""The asyncio client: the same methods as ``RouterClient``, awaited."""

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
from router.client._connection import AsyncConnection
from router.client._example_models import ExamplesDeleted, UsageExamples
from router.client._miss_models import Misses
from router.client._models import RouteResult
from router.client._retry import RetryPolicy
from router.client._session_models import MemoriesDeleted, SessionDeleted, StoredMemory, StoredMessages


class AsyncRouterClient(AsyncConnection):
    """An asyncio client of the tool router's HTTP API; see ``RouterClient`` for each method.

    Args:
        base_url: where the sidecar listens.
        api_key: sent as ``Authorization: Bearer <api_key>`` (a key of the sidecar's ``ROUTER_API_KEYS``).
        timeout: seconds for each request (or an ``httpx.Timeout``); retries come on top.
        retry: when and how requests are tried again (``RetryPolicy(attempts=1)`` disables it).
        headers: extra headers sent with every request.
        transport: an ``httpx`` transport to use instead of the network (``httpx.ASGITransport``
            or ``httpx.MockTransport`` in tests).
    """

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        api_key: str | None = None,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        http = httpx.AsyncClient(
            base_url=base_url, timeout=timeout, headers=calls.headers(api_key, headers), transport=transport
        )
        super().__init__(http, retry)

    async def route(
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
        """The functions that matter for a turn, with the session's history and memories."""
        return await self._send(
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

    async def tool_search(
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
        """Answer a model's search call through the router's search; see ``RouterClient.tool_search``."""
        return await self._send(
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

    async def tools(self, namespace: str, *, format: ListFormat = "openai", load: Sequence[str] = ()) -> CatalogTools:
        """A catalog as one API's ``tools`` array, deferred; see ``RouterClient.tools``."""
        return await self._send(calls.tools(namespace, format=format, load=load))

    async def add_messages(
        self,
        session_id: str,
        messages: Messages,
        *,
        user_id: str | None = None,
        namespace: str | None = None,
    ) -> StoredMessages:
        """Store what a run produced in the session; messages with an ``id`` are stored once."""
        return await self._send(calls.add_messages(session_id, messages, user_id=user_id, namespace=namespace))

    async def get_messages(self, session_id: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        """A session's stored messages, oldest first (the last ``limit`` when given; empty for an unknown session)."""
        return await self._send(calls.get_messages(session_id, limit=limit))

    async def delete_session(self, session_id: str) -> SessionDeleted:
        """Forget a session: its history and the memories scoped to it."""
        return await self._send(calls.delete_session(session_id))

    async def list_memories(
        self, user_id: str, *, namespace: str | None = None, superseded: bool = False
    ) -> list[StoredMemory]:
        """A user's memories, oldest first; see ``RouterClient.list_memories``."""
        return await self._send(calls.list_memories(user_id, namespace=namespace, superseded=superseded))

    async def delete_memory(self, user_id: str, memory_id: str) -> MemoriesDeleted:
        """Forget one memory of a user (``NotFoundError`` when the user has no memory of that id)."""
        return await self._send(calls.delete_memory(user_id, memory_id))

    async def delete_memories(self, user_id: str, *, namespace: str | None = None) -> MemoriesDeleted:
        """Forget every memory of a user, in every namespace (in ``namespace`` only, when given)."""
        return await self._send(calls.delete_memories(user_id, namespace=namespace))

    async def list_examples(
        self, namespace: str, *, function: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> UsageExamples:
        """A page of a namespace's usage examples, oldest first.

        ``function`` lists one function's (``NotFoundError`` when the catalog holds no such function).
        """
        return await self._send(calls.list_examples(namespace, function=function, limit=limit, cursor=cursor))

    async def delete_example(self, namespace: str, example_id: str) -> ExamplesDeleted:
        """Delete one usage example (``NotFoundError`` when the namespace holds none of that id)."""
        return await self._send(calls.delete_example(namespace, example_id))

    async def delete_examples(self, namespace: str, *, function: str | None = None) -> ExamplesDeleted:
        """Delete a namespace's usage examples and the companions they taught.

        ``function`` deletes one function's (``NotFoundError`` when the catalog holds no such function).
        """
        return await self._send(calls.delete_examples(namespace, function=function))

    async def misses(self, namespace: str, *, limit: int | None = None) -> Misses:
        """How often the model called a function its turn had not been routed; see ``RouterClient.misses``."""
        return await self._send(calls.misses(namespace, limit=limit))

    async def list_catalogs(self) -> list[CatalogInfo]:
        """Every known catalog."""
        return await self._send(calls.list_catalogs())

    async def get_catalog(self, namespace: str) -> Catalog:
        """A catalog with its function definitions, as registered (``NotFoundError`` if unknown)."""
        return await self._send(calls.get_catalog(namespace))

    async def put_catalog(
        self,
        namespace: str,
        functions: Sequence[Mapping[str, Any]],
        *,
        pinned: Sequence[str] = (),
        wait: float | None = None,
    ) -> CatalogChanges:
        """Replace a catalog and reconcile it now (``RouterClient.put_catalog``)."""
        return await self._send(calls.put_catalog(namespace, functions, pinned=pinned, wait=wait))

    async def delete_catalog(self, namespace: str) -> CatalogChanges:
        """Delete a catalog and all its functions (``NotFoundError`` if unknown)."""
        return await self._send(calls.delete_catalog(namespace))
