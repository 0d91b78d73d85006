"""A turn routed: its functions, the session's history and the user's memories.

Nothing about a session lives in this object: history and memories are read from and
written to storage on every call, so any replica can serve any turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal

from router.catalog.records import CatalogRecord
from router.common.errors import InvalidRequest, Unavailable
from router.common.messages import context_texts
from router.embedding import EmbeddingUnavailable
from router.embedding.language import ENGLISH
from router.retrieval.catalogs import ActiveIndex, Catalogs
from router.retrieval.ellipsis import elliptical
from router.retrieval.learning import CONTEXT_MESSAGES, called_functions, learn_in_spaces
from router.retrieval.parts import parts
from router.retrieval.runs import results
from router.retrieval.scored import ScoredFunction
from router.routing.checks import CallChecks, Counted
from router.routing.recent import recent_context
from router.routing.remembering import Remembering
from router.routing.routed import Routed, Turn
from router.routing.search import search_turn
from router.routing.settings import RouteSettings
from router.sessions.extraction import MemoryExtractor, StatementExtractor
from router.sessions.history import HistoryStore, as_message
from router.sessions.memory import MemoryStore
from router.sessions.records import MemoryChanges, scope_of
from router.sessions.routes import Misses, RouteRecord
from router.storage.base import StorageUnavailable

log = logging.getLogger(__name__)


class TurnRouter:
    """Routes turns and records what runs produced.

    Args:
        catalogs: the catalogs and the function index (their storage keeps history and memories).
        settings: routing defaults.
        extractor: what turns user input into memories.
        degraded: told of each route answered with the pinned functions only, storage being down.
        counted: told the outcomes of the calls of each stored run (namespace, outcome, calls).
    """

    def __init__(
        self,
        catalogs: Catalogs,
        settings: RouteSettings,
        *,
        extractor: MemoryExtractor | None = None,
        degraded: Callable[[], None] | None = None,
        counted: Counted | None = None,
    ) -> None:
        self._catalogs = catalogs
        self._storage = catalogs.storage
        self._degraded = degraded
        self.settings = settings
        self._history: HistoryStore | None = None
        self.remembering = Remembering(self._storage, extractor or StatementExtractor())
        self.checks = CallChecks(self._storage, roles=settings.roles, counted=counted)

    async def history(self) -> HistoryStore:
        """The history store (opened on first use)."""
        if self._history is None:
            self._history = await asyncio.to_thread(HistoryStore.open, self._storage)
        return self._history

    async def memories(self, index: ActiveIndex) -> MemoryStore:
        """The memories of the model the index embeds with."""
        return await self.remembering.store(index)

    async def user_memories(self) -> MemoryStore:
        """The memories of the model currently serving (what ``/v1/users/{id}/memories`` manages)."""
        return await self.memories(self._catalogs.index)

    async def memory_stores(self) -> list[MemoryStore]:
        """``user_memories``, then the multilingual space's copy of them: what a deletion must reach."""
        return await self.remembering.stores(self._catalogs.index, self._catalogs.multilingual)

    async def route(self, turn: Turn) -> Routed:
        """The functions that matter for ``turn``, plus history and memories.

        When storage or the embedding service cannot be reached and routes fail open, the
        answer is the pinned functions known for the namespace, flagged ``degraded``.
        """
        try:
            routed = await self._route(turn)
        except (StorageUnavailable, EmbeddingUnavailable) as exc:
            pins = self._catalogs.pins
            known = pins.answer(turn.namespace, turn.pinned) if pins is not None else None
            if known is None:
                raise
            context = "\n".join(self._new_texts(turn))
            log.warning("storage or embedding unavailable; routed to the pinned functions", extra={"detail": str(exc)})
            if self._degraded is not None:
                self._degraded()
            return Routed([], [ScoredFunction(f, 0.0) for f in known], context, "", degraded=True)
        if turn.session_id is not None and turn.recorded:
            self.remember(turn.session_id, turn.namespace, "route", routed.context, routed.functions, routed.pinned)
        return routed

    def remember(
        self,
        session_id: str,
        namespace: str,
        kind: Literal["route", "search"],
        request: str,
        functions: Sequence[ScoredFunction],
        pinned: Sequence[ScoredFunction] = (),
    ) -> None:
        """Keep what a session's turn was given, to check the calls of its run against (written off the path)."""
        names, pins = tuple(f.function.name for f in functions), tuple(f.function.name for f in pinned)
        self.checks.remember(RouteRecord(session_id, namespace, kind, request, names, pins))

    async def misses(self, namespace: str, *, limit: int) -> Misses:
        """How often the model called a function of ``namespace`` that its turn had not been routed."""
        return await self.checks.misses(namespace, limit=limit)

    def _new_texts(self, turn: Turn) -> list[str]:
        roles = self.settings.roles
        new = context_texts(turn.messages, roles=roles)
        if not new:
            raise InvalidRequest(f"messages: no message with role {' or '.join(roles)} has any text", field="messages")
        return new

    async def _route(self, turn: Turn) -> Routed:
        # Storage is read off the event loop in at most two hops (before and after the query
        # embedding): every hop waits for a thread, and under load those waits add up. A turn
        # without a session needs nothing stored before its embedding, so it takes one.
        record: CatalogRecord | None = None
        history: list[dict[str, Any]] = []
        if turn.session_id is not None:
            record, history = await asyncio.to_thread(self._lookup, turn, turn.session_id, await self.history())
        roles = self.settings.roles
        new = self._new_texts(turn)
        new_text = "\n".join(new)
        language = self._catalogs.language(new_text)
        # "And AF 456?" asks again what the request before it asked: that request is its context.
        follows = language == ENGLISH and elliptical(new_text)
        recent = recent_context(history, roles=roles, count=turn.recent_messages, follows=follows)
        recent_text = "\n".join(recent if follows else recent + new) if recent else ""
        texts = [new_text, recent_text] if recent_text else [new_text]
        asked = parts(new_text, language)
        # One model call for every query: the whole turn, its recent context and each part it asks, in the
        # space the turn's language chooses (the multilingual one, when set, for a turn not in English).
        index, vectors = await self._catalogs.embed_turn(turn.namespace, [*texts, *asked] if len(asked) > 1 else texts)
        scope = scope_of(session_id=turn.session_id, user_id=turn.user_id)
        memory_store = await self.memories(index) if scope is not None and self.settings.max_memories else None
        catalog, routed = await asyncio.to_thread(
            search_turn,
            self._catalogs,
            self.settings,
            self.remembering,
            index,
            turn,
            record,
            texts,
            asked if len(asked) > 1 else [],
            vectors,
            memory_store,
            elliptical=follows,
            english=language == ENGLISH,
        )
        if not routed.functions and catalog.count > len(routed.pinned) and not routed.below_min_score:
            # The record counts functions the index served lacks: another process switched
            # generations, or wrote the catalog there. An empty answer would hide it.
            if await self._catalogs.follow():
                return await self._route(turn)
            raise Unavailable(
                f"catalog {turn.namespace!r} holds {catalog.count} functions that the index served does not "
                "have yet (a generation change or a write under way); retry shortly"
            )
        found = {p.function.name for p in routed.pinned}
        for position, name in enumerate(turn.pinned):
            if name not in found:
                raise InvalidRequest(f"pinned[{position}]: no function named {name!r} in this catalog", field="pinned")
        if self._catalogs.pins is not None:
            self._catalogs.pins.seen(turn.namespace, catalog.pinned, [p.function for p in routed.pinned])
        kept = [as_message(m) for m in history[-turn.history_messages :]] if turn.history_messages else []
        return replace(routed, history=kept)

    def _lookup(self, turn: Turn, session_id: str, history: HistoryStore) -> tuple[CatalogRecord, list[dict[str, Any]]]:
        record = self._catalogs.known(turn.namespace)
        window = max(turn.history_messages, turn.recent_messages * 4)
        return record, history.messages(session_id, limit=window)

    async def record(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        user_id: str | None,
        namespace: str | None,
    ) -> tuple[list[dict[str, Any]], MemoryChanges]:
        """Store a run's messages in the session; check and learn from its calls; remember what the user stated.

        Returns:
            The messages as stored, and what changed in the memories of the run's scope.
        """
        if namespace is not None:
            await self._catalogs.record(namespace)
        store = await self.history()
        stored = await asyncio.to_thread(store.append, session_id, messages, user_id=user_id, namespace=namespace)
        if any(called_functions(m) or results(m) for m in stored):
            # The session's earlier turns give calls posted after their request that request, and
            # results posted after their call that call.
            window = await asyncio.to_thread(store.messages, session_id, limit=len(stored) + CONTEXT_MESSAGES)
            start = max(0, len(window) - len(stored))
            routed_in = namespace or "default"
            held = None  # an agent's own tools are not the catalog's: their calls are not checked
            called = [name for m in stored for name in called_functions(m)]
            if called and self._catalogs.ready:
                held = await asyncio.to_thread(self._catalogs.index.store.existing, routed_in, called)
            await self.checks.check(session_id, routed_in, window, start=start, held=held)
            if self.settings.learn_from_usage and self._catalogs.ready:
                await learn_in_spaces(
                    self._catalogs,
                    routed_in,
                    window,
                    roles=self.settings.roles,
                    start=start,
                    lexical_weight=self.settings.lexical_weight,
                    session=session_id,
                )
        scope = scope_of(session_id=session_id, user_id=user_id)
        if scope is None:
            return stored, MemoryChanges()
        changes = await self.remembering.keep(
            self._catalogs,
            scope,
            stored,  # a message posted again (a retry) was remembered the first time
            session_id=session_id,
            namespace=namespace,
        )
        return stored, changes

    async def session(self, session_id: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        """A session's history, oldest first (the last ``limit`` messages when given)."""
        store = await self.history()
        return await asyncio.to_thread(store.messages, session_id, limit=limit)

    async def forget(self, session_id: str, *, namespaces: Iterable[str] | None = None) -> int:
        """Delete a session's history, its route records and the memories scoped to it; returns the messages deleted.

        With ``namespaces`` (a key limited to them, which may reach every message of the session), the
        route records and memories of other namespaces stay: a session only routed so far holds no message.
        """
        store = await self.history()
        count = await asyncio.to_thread(store.count, session_id)
        await asyncio.to_thread(store.delete, session_id)
        for memories in await self.memory_stores():
            await asyncio.to_thread(memories.forget, f"session:{session_id}", namespaces=namespaces)
        await self.checks.forget(session_id, namespaces=namespaces)
        return count
