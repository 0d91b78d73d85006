"""The second, multilingual space: built beside the default one and kept in step with it.

``CatalogService`` writes every catalog to the default space first; this writer then writes
the same functions to the multilingual space (``Catalogs.multilingual``), embedding only what
changed there (its own content hashes). When that fails (its embedding service is down), the
default space keeps the catalog, the namespace is marked behind (its non-English turns are
routed in the default space) and ``catch_up`` writes it later. A change of the multilingual
model (or its text template) is a generation change of its own, kept under the meta
collection's ``multilingual`` key: the new space is built while turns are routed as before,
then served in one step; its usage examples and memories are embedded again with the model.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from router.catalog.functions import FunctionDef
from router.catalog.records import Generation
from router.retrieval.catalogs import ActiveIndex, Catalogs
from router.retrieval.index import FunctionStore
from router.sessions.records import memory_spec
from router.sessions.reembed import drop_memories, reembed_memories
from router.storage.base import Storage
from sync.diff import Summary
from sync.reconcile import reembed_examples

log = logging.getLogger(__name__)
SPACE = "multilingual"
# (store, embedder, namespace, functions): the service's reconcile, with its counters and log.
Reconcile = Callable[..., Awaitable[Summary]]


class MultilingualWriter:
    """Builds the multilingual space and writes each catalog change to it.

    Every method runs under the service's write lock except ``build``'s first copy, whose
    writes a final pass under the lock catches up with.

    Args:
        storage: the open storage.
        catalogs: what routes read; its ``multilingual`` and ``behind`` are set here, and its
            models loaded (the multilingual one among them).
        model: the multilingual model's name (a remote service's identity).
        text: the function text template.
        reconcile: the service's reconcile (``sync.reconcile.reconcile`` with its counters).
        lexical_weight: the words' weight in the space (``ActiveIndex.lexical_weight``).
        vague: the space's vague mark (``ActiveIndex.vague``).
        failed: told of each failed write to the multilingual space.
    """

    def __init__(
        self,
        storage: Storage,
        catalogs: Catalogs,
        *,
        model: str,
        text: str,
        reconcile: Reconcile,
        lexical_weight: float | None = None,
        vague: float | None = None,
        failed: Callable[[], None] | None = None,
    ) -> None:
        self._storage = storage
        self._catalogs = catalogs
        self.model = model
        self._text = text
        self._reconcile = reconcile
        self._failed = failed
        self._lexical_weight = lexical_weight
        self._vague = vague
        self._building = asyncio.Lock()

    @property
    def ready(self) -> bool:
        """Whether the multilingual space is served."""
        return self._catalogs.multilingual is not None

    async def build(self, lock: asyncio.Lock) -> None:
        """Serve the wanted multilingual generation, building it first when it is not the active one.

        Raises:
            Exception: the multilingual model cannot be reached (the caller retries later).
        """
        async with self._building:
            if not self.ready:
                await self._build(lock)

    async def _build(self, lock: asyncio.Lock) -> None:
        embedder = await self._catalogs.load(self.model)
        wanted = Generation(self.model, self._text, embedder.dimension)
        meta = self._catalogs.meta
        active = await asyncio.to_thread(meta.active_generation, SPACE)
        new = await asyncio.to_thread(self._catalogs.open_store, wanted)
        index = ActiveIndex(new, embedder, self._lexical_weight, self._vague)
        building = active is None or active.id != wanted.id
        old = await asyncio.to_thread(self._catalogs.open_store, active) if active and building else None
        if building:
            log.info("building the multilingual space", extra={"to": wanted.as_payload()})
            await self._copy(index)
            await reembed_examples(old, new, embedder)
        async with lock:
            # Catch up with the writes of the copy's time (on a restart: with any that failed).
            await self._copy(index)
            await self._mirror(index)
            if building:
                await reembed_examples(old, new, embedder)
                await asyncio.to_thread(meta.set_active_generation, wanted, SPACE)
            self._catalogs.multilingual = index
            self._catalogs.behind.clear()
        log.info("multilingual space served", extra={"generation": wanted.id, "model": wanted.model})
        if active is not None and old is not None:
            await asyncio.to_thread(self._storage.drop, active.spec.name)
            # The default space's memories stay, should its model once have been the multilingual one.
            kept = {memory_spec(wanted.model, wanted.dimension).name, memory_spec(*self._default()).name}
            if memory_spec(active.model, active.dimension).name not in kept:
                await asyncio.to_thread(drop_memories, self._storage, model=active.model, dimension=active.dimension)

    def _default(self) -> tuple[str, int]:
        embedder = self._catalogs.index.embedder
        return embedder.model_name, embedder.dimension

    async def _copy(self, index: ActiveIndex) -> None:
        """Write every catalog of the default space whose functions ``index`` does not hold as they are."""
        source = self._catalogs.index.store
        for namespace in await self._catalogs.records():
            await self._catch_up(index, source, namespace)

    async def _catch_up(self, index: ActiveIndex, source: FunctionStore, namespace: str) -> None:
        wanted = await asyncio.to_thread(source.hashes, namespace)
        if wanted == await asyncio.to_thread(index.store.hashes, namespace):
            return
        functions = await asyncio.to_thread(source.list, namespace) if wanted else []
        await self._write(index, namespace, functions)

    async def _write(self, index: ActiveIndex, namespace: str, functions: Sequence[FunctionDef]) -> None:
        await self._reconcile(index.store, index.embedder, namespace, functions)

    async def _mirror(self, index: ActiveIndex) -> None:
        """Make the multilingual space's memories those of the default space."""
        # Cleared before the copy: a memory whose own mirror fails meanwhile marks it again.
        self._catalogs.memories_behind = False
        try:
            await reembed_memories(self._storage, source=self._default(), target=index.embedder)
        except BaseException:
            self._catalogs.memories_behind = True
            raise

    async def apply(self, namespace: str, functions: Sequence[FunctionDef]) -> None:
        """Write a catalog just written to the default space; on failure mark it behind (logged, counted)."""
        index = self._catalogs.multilingual
        if index is None:
            return  # the build copies it
        try:
            await self._write(index, namespace, functions)
        except Exception as exc:
            self._behind(namespace, exc)
            return
        self._catalogs.behind.discard(namespace)

    def _behind(self, namespace: str, exc: Exception) -> None:
        self._catalogs.behind.add(namespace)
        log.warning(
            "the multilingual space lags a catalog; its non-English turns use the default space until it catches up",
            extra={"namespace": namespace, "detail": str(exc) or type(exc).__name__},
        )
        if self._failed is not None:
            self._failed()

    async def catch_up(self) -> None:
        """Write the namespaces behind (deleted ones emptied) and mirror the memories again when that failed."""
        index = self._catalogs.multilingual
        if index is None:
            return
        source = self._catalogs.index.store
        for namespace in sorted(self._catalogs.behind):
            try:
                await self._catch_up(index, source, namespace)
            except Exception as exc:
                self._behind(namespace, exc)
                return
            self._catalogs.behind.discard(namespace)
        if self._catalogs.memories_behind:
            await self._mirror(index)
