"""Checking the calls of stored runs against what their turns were routed (see ``router.sessions.routes``).

A route's record is written after its answer is computed, in a thread, so the route does not
wait for the write. Storing a run of the same session first waits for those pending writes,
so a run stored right after its route on the same replica is always checked against it. A run
stored on another replica within the moment the write takes may find no route yet, and its
calls are then ``unchecked``, never wrongly missed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from typing import Any

from router.retrieval.learning import call_requests
from router.sessions.routes import Call, Checked, Misses, RouteLog, RouteRecord, check
from router.storage.base import Storage

log = logging.getLogger(__name__)
# Told the outcome of each call checked: (namespace, outcome, calls).
Counted = Callable[[str, str, int], None]


class CallChecks:
    """Route records written off the route's path, and the outcome of each call of a stored run.

    Args:
        storage: where route records and checked calls are kept.
        roles: routing's roles (whose text makes a call's request).
        counted: told the outcomes of each run checked.
    """

    def __init__(self, storage: Storage, *, roles: Sequence[str], counted: Counted | None = None) -> None:
        self._storage = storage
        self._roles = tuple(roles)
        self._counted = counted
        self._log: RouteLog | None = None
        self._opening = asyncio.Lock()
        self._pending: dict[str, set[asyncio.Task[None]]] = {}

    async def log(self) -> RouteLog:
        """The route log (opened on first use)."""
        async with self._opening:
            if self._log is None:
                self._log = await asyncio.to_thread(RouteLog.open, self._storage)
        return self._log

    def remember(self, record: RouteRecord) -> None:
        """Write a route record in the background (``settle`` waits for it)."""
        task = asyncio.create_task(self._write(record), name="route-record")
        pending = self._pending.setdefault(record.session_id, set())
        pending.add(task)
        task.add_done_callback(lambda done: self._done(record.session_id, done))

    async def _write(self, record: RouteRecord) -> None:
        route_log = await self.log()
        await asyncio.to_thread(route_log.add, record)

    def _done(self, session_id: str, task: asyncio.Task[None]) -> None:
        pending = self._pending.get(session_id)
        if pending is not None:
            pending.discard(task)
            if not pending:
                del self._pending[session_id]
        if not task.cancelled() and task.exception() is not None:
            log.warning("route record not written", exc_info=task.exception(), extra={"session_id": session_id})

    async def settle(self, session_id: str | None = None) -> None:
        """Wait for the pending route records of one session (of every session when None)."""
        if session_id is None:
            tasks = [t for pending in self._pending.values() for t in pending]
        else:
            tasks = list(self._pending.get(session_id, ()))
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def check(
        self,
        session_id: str,
        namespace: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        start: int,
        held: Container[str] | None = None,
    ) -> list[Checked]:
        """Check the calls of ``messages[start:]`` (stored messages, with ``seq``), keep and count their outcomes.

        With ``held``, the catalog's functions, calls to other functions are not checked.
        """
        calls = [
            Call(int(messages[position]["seq"]), _key(messages[position]), name, request)
            for position, name, request in call_requests(messages, roles=self._roles, start=start)
            if held is None or name in held
        ]
        if not calls:
            return []
        await self.settle(session_id)
        route_log = await self.log()
        records = await asyncio.to_thread(route_log.recent, session_id, namespace)
        checked = check(calls, records)
        await asyncio.to_thread(route_log.keep, session_id, namespace, checked)
        if self._counted is not None:
            for outcome in {c.outcome for c in checked}:
                self._counted(namespace, outcome, sum(c.outcome == outcome for c in checked))
        return checked

    async def misses(self, namespace: str, *, limit: int) -> Misses:
        """The catalog's miss figures (see ``RouteLog.misses``)."""
        route_log = await self.log()
        return await asyncio.to_thread(route_log.misses, namespace, limit=limit)

    async def forget(self, session_id: str, *, namespaces: Iterable[str] | None = None) -> None:
        """Delete the session's route records and checked calls (of ``namespaces`` when given)."""
        await self.settle(session_id)
        route_log = await self.log()
        await asyncio.to_thread(route_log.forget, session_id, namespaces=namespaces)


def _key(message: Mapping[str, Any]) -> str:
    """The message's identity as history keys it: its own id, else its ``seq``."""
    key = message.get("id") or message.get("message_id")
    return str(key) if key else f"#{message['seq']}"
