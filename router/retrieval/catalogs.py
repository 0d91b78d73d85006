"""The catalogs as routes read them: their records, and the function index of the generation served.

A process has one ``Catalogs``. The writer (``sync.service.CatalogService``) opens it, chooses
the generation it serves and switches it after a rebuild; routes only read it. In server mode,
a process follows the generation another process made active.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from router.catalog.functions import FunctionDef
from router.catalog.records import CatalogRecord, Generation, MetaStore
from router.common.errors import NamespaceNotFound, Unavailable
from router.embedding import Embedder, EmbedderPool
from router.retrieval.index import FunctionStore
from router.retrieval.pins import PinnedFunctions
from router.storage.base import Storage

__all__ = ["ActiveIndex", "Catalogs"]


@dataclass(frozen=True)
class ActiveIndex:
    """What routing uses right now: a generation's store and its embedder."""

    store: FunctionStore
    embedder: Embedder

    @property
    def generation(self) -> Generation:
        """The generation being served."""
        return self.store.generation


class Catalogs:
    """The known catalogs and the function index routes use.

    Args:
        storage: the open storage.
        embedders: loaded models (the model of the generation served among them).

    Attributes:
        pins: each catalog's pinned functions kept for routes that cannot reach storage (None
            unless routes fail open); the writer keeps them equal to what it writes.
    """

    def __init__(self, storage: Storage, embedders: EmbedderPool) -> None:
        self.storage = storage
        self.embedders = embedders
        self._meta: MetaStore | None = None
        self._index: ActiveIndex | None = None
        self.pins: PinnedFunctions | None = None

    async def open(self) -> MetaStore:
        """Open the records of the store (the meta collection, created when missing)."""
        if self._meta is None:
            self._meta = await asyncio.to_thread(MetaStore.open, self.storage)
        return self._meta

    @property
    def meta(self) -> MetaStore:
        """The records of the store (after ``open``)."""
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

    async def serve(self, generation: Generation) -> ActiveIndex:
        """Serve ``generation`` from now on: open its store and load its model."""
        embedder = await self.embedders.get(generation.model)
        store = await asyncio.to_thread(FunctionStore.open, self.storage, generation)
        self._index = ActiveIndex(store, embedder)
        return self._index

    def switch(self, index: ActiveIndex) -> None:
        """Serve an index already open (a generation just built)."""
        self._index = index

    async def follow(self) -> bool:
        """Serve the generation another process made active; True when it switched."""
        active = await asyncio.to_thread(self.meta.active_generation)
        if active is None or (self._index is not None and self._index.generation.id == active.id):
            return False
        await self.serve(active)
        return True

    async def records(self) -> dict[str, CatalogRecord]:
        """Every known catalog, by namespace."""
        return await asyncio.to_thread(self.meta.catalogs)

    async def record(self, namespace: str) -> CatalogRecord:
        """The record of a known namespace; 404 when unknown."""
        return await asyncio.to_thread(self.known, namespace)

    def known(self, namespace: str) -> CatalogRecord:
        """``record`` on the calling thread (blocking)."""
        record = self.meta.catalog(namespace)
        if record is None:
            raise NamespaceNotFound(f"no catalog named {namespace!r}", field="namespace")
        return record

    async def functions(self, namespace: str) -> list[FunctionDef]:
        """The stored functions of a known namespace, sorted by name."""
        await self.record(namespace)
        return await asyncio.to_thread(self.index.store.list, namespace)
