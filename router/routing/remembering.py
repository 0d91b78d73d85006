"""The memory side of a turn: which of the user's memories come back, and what a run adds.

``TurnRouter`` routes a turn and stores a run; what either means for the user's memories is
here: recall ranks a scope's memories against the turn and the functions routed for it
(``router.sessions.recall``), and a stored run's user statements become memories, kept until
the time they name ends and replacing the ones they update (``router.sessions.memory``).

With a multilingual space, its memories mirror the default space's (the same memories, each
embedded by its model), so that recall for a turn not in English reads vectors of that turn's model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

import numpy as np

from router.embedding import Vectors
from router.retrieval.catalogs import ActiveIndex, Catalogs
from router.retrieval.scored import ScoredFunction
from router.routing.settings import RouteSettings
from router.sessions.expiry import expires_at
from router.sessions.extraction import MemoryExtractor, forget_requests, memory_candidates
from router.sessions.memory import MemoryStore
from router.sessions.recall import RecallSettings, rank
from router.sessions.records import ANY_NAMESPACE, Memory, MemoryChanges, MemoryRows
from router.sessions.reembed import reembed_memories
from router.sessions.slots import forgets, slot_of
from router.storage.base import Storage

log = logging.getLogger(__name__)


class Remembering:
    """Each embedding model's memories store, recall for a route, and memories from a stored run.

    Args:
        storage: where the memories collections live.
        extractor: what turns user input into memories.
    """

    def __init__(self, storage: Storage, extractor: MemoryExtractor) -> None:
        self._storage = storage
        self._extractor = extractor
        self._stores: dict[str, MemoryStore] = {}

    async def store(self, index: ActiveIndex) -> MemoryStore:
        """The memories of the model the index embeds with (opened on first use)."""
        model, dimension = index.embedder.model_name, index.embedder.dimension
        if model not in self._stores:
            self._stores[model] = await asyncio.to_thread(
                MemoryStore.open, self._storage, model=model, dimension=dimension
            )
        return self._stores[model]

    async def stores(self, index: ActiveIndex, mirror: ActiveIndex | None) -> list[MemoryStore]:
        """``index``'s memories, then ``mirror``'s copy of them (what a deletion must reach)."""
        return [await self.store(i) for i in (index, mirror) if i is not None]

    def recall(
        self,
        index: ActiveIndex,
        namespace: str,
        rows: MemoryRows,
        chosen: Sequence[ScoredFunction],
        vectors: Vectors,
        own: RouteSettings,
    ) -> list[Memory]:
        """The memories of ``rows`` that matter for the turn (``vectors``: the turn, then its context).

        ``own`` gives the cut-off: its ``max_memories`` and ``memory_*`` settings.
        """
        if not rows.texts:
            return []
        facets = index.store.facets(namespace, [f.function.name for f in chosen])
        routed = [(f.score, facets[f.function.name]) for f in chosen if f.function.name in facets]
        settings = RecallSettings(
            limit=own.max_memories,
            standout=own.memory_standout,
            min_score=own.memory_min_score,
            budget=own.memory_budget,
            budget_chars=own.memory_budget_chars,
        )
        recent = vectors[1] if len(vectors) > 1 else None
        return rank(rows, vectors[0], recent=recent, functions=routed, settings=settings)

    async def keep(
        self,
        catalogs: Catalogs,
        scope: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        session_id: str,
        namespace: str | None,
    ) -> MemoryChanges:
        """Remember what the user stated in ``messages``; say what changed in the scope's memories.

        A time-bound statement ("on call this week") is kept until the end of its time; one that
        updates a stored memory ("we moved to Lisbon") supersedes it; a memory the user asks to be
        forgotten ("Forget that I live in Porto") is deleted. The multilingual space,
        when there is one, is then brought in step (``mirrored``); when that fails, the writer's
        catch-up tries again (``Catalogs.memories_behind``).
        """
        index, mirror = catalogs.index, catalogs.multilingual
        facts, asked = await asyncio.to_thread(self._said, messages)
        memories = await self.store(index)
        # Before what the run states: "Forget my address. I live in Lisbon now." keeps Lisbon.
        forgotten = await asyncio.to_thread(memories.drop, scope, namespace or ANY_NAMESPACE, asked)
        now = datetime.now(UTC)
        ends = [expires_at(fact, now=now) for fact in facts]
        # A statement about a time already past ("we met yesterday") holds nothing now.
        kept = [(fact, end) for fact, end in zip(facts, ends, strict=True) if end is None or end > now.timestamp()]
        texts, until = [fact for fact, _ in kept], [end for _, end in kept]
        # Without anything to keep, the scope's memories are still read: the answer says which expired.
        vectors = await index.embedder.embed(texts, kind="memory") if texts else np.zeros((0, index.embedder.dimension))
        add = partial(memories.add, session_id=session_id, expires_at=until)
        changes = await asyncio.to_thread(add, scope, namespace or ANY_NAMESPACE, texts, vectors)
        if mirror is not None and (texts or forgotten) and not await self.mirrored(index, mirror):
            catalogs.memories_behind = True
        return replace(changes, forgotten=forgotten)

    async def mirrored(self, index: ActiveIndex, mirror: ActiveIndex) -> bool:
        """Make ``mirror``'s memories those of ``index`` (embedding only what it lacks); False when it failed.

        A failure (the multilingual service down) is logged.
        """
        source = (index.embedder.model_name, index.embedder.dimension)
        try:
            await reembed_memories(self._storage, source=source, target=mirror.embedder)
        except Exception as exc:
            log.warning("memories not mirrored in the multilingual space", extra={"detail": str(exc)})
            return False
        return True

    def _said(self, messages: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[str]]:
        """What the user stated, and what they asked to forget, in order.

        A request to forget also takes back what the run stated before it ("I love jazz. Actually,
        forget that I love jazz." keeps nothing), not what follows it.
        """
        # Off the event loop: a model-based extractor may take a while.
        facts: list[str] = []
        asked: list[str] = []
        for text in memory_candidates(messages):
            for before, request in forget_requests(text):
                facts.extend(self._extractor.extract(before) if before.strip() else [])
                if request is not None:
                    asked.append(request)
                    facts = [f for f in facts if not forgets(request, f, (slot_of(f) or (None,))[0])]
        return list(dict.fromkeys(facts)), asked
