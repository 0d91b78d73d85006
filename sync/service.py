"""The one writer of catalogs: reconcile, delete, and switch generations without downtime."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from router.catalog import FunctionDef
from router.embedding import Embedder, EmbedderPool
from router.errors import NamespaceNotFound, Unavailable
from router.fallback import PinnedFunctions
from router.meta import CatalogRecord, MetaStore
from router.metrics import Metrics
from router.retrieval.index import ActiveIndex, FunctionStore, Generation
from router.retrieval.texts import template
from router.sessions.reembed import drop_memories, reembed_memories
from router.storage.base import Storage
from sync.diff import Summary
from sync.progress import ProgressFactory
from sync.reconcile import PlanWriter, reembed_examples
from sync.status import SyncLog

log = logging.getLogger(__name__)


class CatalogService:
    """Keeps the stored catalogs equal to what sources ask for.

    Every write goes through one lock, so reconciles of the HTTP API, the directory worker
    and a generation rebuild never interleave.

    Args:
        storage: the open storage.
        embedders: loaded models.
        model: the embedding model wanted for new vectors.
        text: the function text template wanted for new vectors.
        progress: makes a progress callback for large embeddings (the CLI's progress bar).
        metrics: where reconciles are counted.

    Attributes:
        log: each namespace's last sync in this process, and the embeddings under way.
        pins: the pinned functions kept for routes that cannot reach storage (None unless
            routes fail open); kept equal to what is written.
    """

    def __init__(
        self,
        storage: Storage,
        embedders: EmbedderPool,
        *,
        model: str,
        text: str,
        progress: ProgressFactory | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        template(text)  # reject an unknown template before anything is loaded
        self._storage = storage
        self._embedders = embedders
        self._model = model
        self._text = text
        self._progress = progress
        self.metrics = metrics or Metrics()
        self.pins: PinnedFunctions | None = None
        self.log = SyncLog()
        self._writer = PlanWriter(progress, self.log, self.metrics)
        self._lock = asyncio.Lock()
        self._rebuilding = asyncio.Lock()
        self._meta: MetaStore | None = None
        self._index: ActiveIndex | None = None
        self._pending: Generation | None = None

    @property
    def meta(self) -> MetaStore:
        """The meta collection (after ``open``)."""
        if self._meta is None:
            raise Unavailable("storage is not open yet")
        return self._meta

    @property
    def index(self) -> ActiveIndex:
        """What routing uses now; 503 while no generation can be served."""
        if self._index is None:
            raise Unavailable("no function index is ready yet (the embedding model is loading or rebuilding)")
        return self._index

    @property
    def ready(self) -> bool:
        """Whether a generation is being served."""
        return self._index is not None

    @property
    def rebuild_pending(self) -> bool:
        """Whether the wanted generation differs from the one served."""
        return self._pending is not None

    async def open(self) -> None:
        """Open storage records and load the models needed to serve (and, if needed, rebuild)."""
        self._meta = meta = await asyncio.to_thread(MetaStore.open, self._storage)
        embedder = await self._embedders.get(self._model)
        wanted = Generation(self._model, self._text, embedder.dimension)
        active = await asyncio.to_thread(meta.active_generation)
        if active is None or active.id == wanted.id:
            store = await asyncio.to_thread(FunctionStore.open, self._storage, wanted)
            if active is None:
                await asyncio.to_thread(meta.set_active_generation, wanted)
            self._index = ActiveIndex(store, embedder)
            return
        log.info("generation change", extra={"from": active.as_payload(), "to": wanted.as_payload()})
        self._pending = wanted
        try:
            old = await self._embedders.get(active.model)
            self._index = ActiveIndex(await asyncio.to_thread(FunctionStore.open, self._storage, active), old)
        except Exception:
            log.exception("cannot load the previous model; routing waits for the rebuild")

    async def follow(self) -> bool:
        """Switch to the generation another process made active; True when it switched."""
        active = await asyncio.to_thread(self.meta.active_generation)
        if active is None or (self._index is not None and self._index.generation.id == active.id):
            return False
        embedder = await self._embedders.get(active.model)
        self._index = ActiveIndex(await asyncio.to_thread(FunctionStore.open, self._storage, active), embedder)
        if self._pending is not None and self._pending.id == active.id:
            self._pending = None
        return True

    async def rebuild(self) -> None:
        """Build the wanted generation beside the served one, then switch over atomically.

        Concurrent calls build once: a caller that finds the switch already done returns.
        """
        async with self._rebuilding:
            target = self._pending
            if target is None:
                return
            meta = self.meta
            previous = await asyncio.to_thread(meta.active_generation)
            old = await asyncio.to_thread(FunctionStore.open, self._storage, previous) if previous else None
            new = await asyncio.to_thread(FunctionStore.open, self._storage, target)
            embedder = await self._embedders.get(target.model)
            copied = await self._copy(old, new, embedder)
            examples = await reembed_examples(old, new, embedder)
            memories = (previous.model, previous.dimension) if previous is not None else None
            if memories is not None:
                await reembed_memories(self._storage, source=memories, target=embedder)
            async with self._lock:
                # Catch up with writes that landed in the old generation while the copy ran,
                # deletions included.
                listed = await self._copy(old, new, embedder)
                if memories is not None:
                    await reembed_memories(self._storage, source=memories, target=embedder)
                for namespace in copied - listed:
                    await self._writer.reconcile(new, embedder, namespace, [])
                await reembed_examples(old, new, embedder, after=examples)
                await asyncio.to_thread(meta.set_active_generation, target)
                self._index = ActiveIndex(new, embedder)
                self._pending = None
            log.info("generation switched", extra={"generation": target.id, "model": target.model, "text": target.text})
            if previous is not None and previous.id != target.id:
                await asyncio.to_thread(self._storage.drop, previous.spec.name)
                if previous.model != target.model:
                    await asyncio.to_thread(
                        drop_memories, self._storage, model=previous.model, dimension=previous.dimension
                    )
                    self._embedders.release(previous.model)

    async def _copy(self, old: FunctionStore | None, new: FunctionStore, embedder: Embedder) -> set[str]:
        catalogs = await asyncio.to_thread(self.meta.catalogs)
        for namespace in catalogs:
            functions = await asyncio.to_thread(old.list, namespace) if old else []
            await self._writer.reconcile(new, embedder, namespace, functions)
        return set(catalogs)

    async def apply(
        self, namespace: str, functions: Sequence[FunctionDef], *, source: str, pinned: Sequence[str] = ()
    ) -> Summary:
        """Make ``namespace`` hold exactly ``functions``, embedding only new or changed ones.

        Args:
            namespace: the catalog to replace.
            functions: its functions, validated.
            source: where they came from (``api``, ``dir:<path>``).
            pinned: names always returned with a route of this namespace.
        """
        try:
            async with self._lock:
                index = self.index
                record = await asyncio.to_thread(self.meta.catalog, namespace)
                summary = await self._writer.reconcile(index.store, index.embedder, namespace, functions)
                if summary.changed or record is None or not record.written_from(source, pinned):
                    put = self.meta.put_catalog
                    await asyncio.to_thread(put, namespace, source=source, count=len(functions), pinned=pinned)
                if self.pins is not None:
                    self.pins.written(namespace, functions, pinned)
        except Exception as exc:
            self.metrics.sync_failed(source)
            self.log.failed(namespace, source, str(exc) or type(exc).__name__)
            raise
        self.metrics.synced(source, summary)
        self.log.synced(source, summary)
        if summary.changed:
            log.info("catalog reconciled", extra={"source": source, **summary.counts(), "namespace": namespace})
        return summary

    async def remove(self, namespace: str) -> Summary:
        """Delete a namespace and all its functions."""
        async with self._lock:
            record = await asyncio.to_thread(self.meta.catalog, namespace)
            if record is None:
                raise NamespaceNotFound(f"no catalog named {namespace!r}", field="namespace")
            index = self.index
            summary = await self._writer.reconcile(index.store, index.embedder, namespace, [])
            await asyncio.to_thread(self.meta.delete_catalog, namespace)
            if self.pins is not None:
                self.pins.deleted(namespace)
        self.metrics.synced(record.source, summary)
        self.log.synced(record.source, summary)
        log.info("catalog deleted", extra={"namespace": namespace, "removed": summary.removed})
        return summary

    async def functions(self, namespace: str) -> list[FunctionDef]:
        """The stored functions of a known namespace."""
        await self.catalog(namespace)
        return await asyncio.to_thread(self.index.store.list, namespace)

    async def catalog(self, namespace: str) -> CatalogRecord:
        """The record of a known namespace; 404 when unknown."""
        return await asyncio.to_thread(self.known, namespace)

    def known(self, namespace: str) -> CatalogRecord:
        """``catalog`` on the calling thread (blocking)."""
        record = self.meta.catalog(namespace)
        if record is None:
            raise NamespaceNotFound(f"no catalog named {namespace!r}", field="namespace")
        return record

    async def catalogs(self) -> dict[str, CatalogRecord]:
        """Every known catalog."""
        return await asyncio.to_thread(self.meta.catalogs)
