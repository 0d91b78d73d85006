"""The heavy things of one process (storage, models, the catalog writer, the worker) and their lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from router.embedding import Embedder, EmbedderPool, EmbeddingUnavailable
from router.retrieval.catalogs import Catalogs
from router.routing.turns import TurnRouter
from router.server.backends import embedder_pool, open_storage
from router.server.metrics import Metrics
from router.server.settings import Settings
from router.sessions.extraction import MemoryExtractor
from router.storage.base import Storage, StorageUnavailable
from sync.reconcile import ProgressFactory
from sync.service import CatalogService
from sync.worker import DirectorySync

log = logging.getLogger(__name__)
REBUILD_RETRY_CAP = 60.0  # seconds between attempts of a failing generation rebuild, at most


class Runtime:
    """Owns storage, models and background tasks from ``start`` to ``stop``.

    Args:
        settings: the process settings.
        storage: an already open storage to use instead of the configured one.
        embedders: an embedder pool to share (tests reuse one loaded model).
        progress: progress callback factory for large embeddings.
        extractor: what turns user input into memories (``StatementExtractor`` when None).

    Attributes:
        metrics: this process's metrics (its own registry).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        storage: Storage | None = None,
        embedders: EmbedderPool | None = None,
        progress: ProgressFactory | None = None,
        extractor: MemoryExtractor | None = None,
    ) -> None:
        self.settings = settings
        self._extractor = extractor
        self._storage = storage
        self._owns_storage = storage is None
        self.embedders = embedders or embedder_pool(settings.embedding, settings.multilingual)
        self._owns_embedders = embedders is None
        self._progress = progress
        self.metrics = Metrics()
        self._service: CatalogService | None = None
        self._turns: TurnRouter | None = None
        self.worker: DirectorySync | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.started = asyncio.Event()
        self.error: BaseException | None = None

    @property
    def storage(self) -> Storage:
        """The open storage."""
        if self._storage is None:
            raise StorageUnavailable("storage is not open yet")
        return self._storage

    @property
    def service(self) -> CatalogService:
        """The catalog writer and function index."""
        if self._service is None:
            raise StorageUnavailable("the service is still starting")
        return self._service

    @property
    def catalogs(self) -> Catalogs:
        """What routes read: the catalogs' records and the function index served."""
        return self.service.catalogs

    @property
    def turns(self) -> TurnRouter:
        """Routes turns and records sessions."""
        if self._turns is None:
            raise StorageUnavailable("the service is still starting")
        return self._turns

    def readiness(self) -> dict[str, bool]:
        """Each readiness condition: model loaded, storage open, first sync done, and with an
        embedding service, ``embedding``: its last request succeeded."""
        checks = {
            "storage": self._storage is not None,
            "model": self._service is not None and self._service.catalogs.ready,
            "first_sync": self.started.is_set() and (self.worker is None or self.worker.first_pass_done.is_set()),
        }
        if self.settings.embedding.remote:
            embedder = self._served_embedder()
            checks["embedding"] = embedder is not None and getattr(embedder, "failure", None) is None
        return checks

    def ready(self, checks: dict[str, bool]) -> bool:
        """Whether ``checks`` (of ``readiness``) make the process ready.

        A failing embedding service does not when routes fail open: every replica shares the
        service, and a route answers the pinned functions meanwhile, as with storage down.
        """
        failing_open = self.settings.route.fail_open
        return all(held or (name == "embedding" and failing_open) for name, held in checks.items())

    def _served_embedder(self) -> Embedder | None:
        service = self._service
        return service.index.embedder if service is not None and service.catalogs.ready else None

    async def check_embedding(self) -> None:
        """Ask a failing embedding service again (at most every few seconds), so readiness can recover."""
        embedder = self._served_embedder()
        if embedder is not None:
            await embedder.check()

    async def start(self) -> None:
        """Open storage, load the model, start the worker and any pending rebuild."""
        try:
            if self._storage is None:
                self._storage = await asyncio.to_thread(open_storage, self.settings.storage)
            embedding = self.settings.embedding
            self.embedders.observers.append(self.metrics.encoded)
            self.embedders.request_observers.append(self.metrics.requested)
            service = CatalogService(
                self._storage,
                self.embedders,
                model=embedding.identity,
                text=embedding.text,
                progress=self._progress,
                counters=self.metrics,
                limits=self.settings.limits,
                sole_writer=self._owns_storage and self.settings.storage.embedded,
                multilingual=self.settings.multilingual.identity or None,
                multilingual_lexical=self.settings.multilingual.lexical_weight,
                multilingual_vague=self.settings.multilingual.context_vague,
                multilingual_text=self.settings.multilingual.text,
                same_request=embedding.same_request,
                multilingual_same_request=self.settings.multilingual.same_request,
            )
            await service.open()
            catalogs = service.catalogs
            catalogs.fell_back = self.metrics.fell_back
            if self.settings.route.fail_open:
                await catalogs.keep_pins()
            self.metrics.catalogs.read = catalogs.meta.catalogs
            self._service = service
            self._turns = TurnRouter(
                catalogs,
                self.settings.route,
                extractor=self._extractor,
                degraded=self.metrics.degraded.inc,
                counted=self.metrics.checked,
            )
            if service.rebuild_pending:
                self._spawn(self._rebuild(service), "rebuild")
            if service.multilingual is not None:
                self._spawn(self._multilingual(service), "multilingual")
            catalog = self.settings.sync.catalog
            if catalog is not None and not catalog.is_dir():
                raise FileNotFoundError(f"catalog directory {catalog} does not exist")
            if catalog is not None:
                self.worker = DirectorySync(service, catalog, allow_delete=self.settings.sync.allow_delete)
                watch = self.worker.watch(
                    debounce_ms=self.settings.sync.debounce_ms, retry_seconds=self.settings.sync.retry_seconds
                )
                self._spawn(watch, "catalog-watch")
            if not self.settings.storage.embedded:
                self._spawn(self._follow(), "follow-generation")
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            self.started.set()

    async def wait_ready(self) -> None:
        """Wait until every readiness condition holds (wrap in ``asyncio.timeout`` to bound it)."""
        while not all(self.readiness().values()):
            if self.error is not None:
                raise self.error
            await asyncio.sleep(0.02)

    async def _rebuild(self, service: CatalogService) -> None:
        # The new model may fail for a while (an embedding service down, a storage outage): the
        # old generation keeps serving, and the rebuild resumes from what it already wrote.
        delay = self.settings.sync.retry_seconds
        while True:
            try:
                await service.rebuild()
                return
            except Exception as exc:
                expected = isinstance(exc, (EmbeddingUnavailable, StorageUnavailable))  # else a traceback
                detail = {"detail": str(exc), "delay": delay}
                log.warning("generation rebuild failed; will retry", extra=detail, exc_info=not expected)
            await asyncio.sleep(delay)
            delay = min(delay * 2, max(REBUILD_RETRY_CAP, self.settings.sync.retry_seconds))

    async def _multilingual(self, service: CatalogService) -> None:
        """Build the multilingual space, then keep catching it up, trying again while its service fails."""
        while True:
            try:
                await service.catch_up_multilingual()
            except Exception as exc:
                log.warning("the multilingual space waits for its model", extra={"detail": str(exc)})
            await asyncio.sleep(self.settings.multilingual.retry_seconds)

    async def _follow(self) -> None:
        while True:
            await asyncio.sleep(self.settings.sync.follow_seconds)
            try:
                if await self.catalogs.follow():
                    log.info("following the active generation", extra={"id": self.catalogs.index.generation.id})
            except Exception:
                log.exception("cannot read the active generation")

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(work, name=name)
        task.add_done_callback(_log_failure)
        self._tasks.append(task)

    async def stop(self) -> None:
        """Cancel background tasks, then release models and storage."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            # One that failed was logged when it failed: raised again here, it left storage open.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self._turns is not None:
            await self._turns.checks.settle()
        if self._service is not None:
            await self._service.settle()
        if self.metrics.encoded in self.embedders.observers:
            self.embedders.observers.remove(self.metrics.encoded)
        if self.metrics.requested in self.embedders.request_observers:
            self.embedders.request_observers.remove(self.metrics.requested)
        if self._owns_embedders:
            self.embedders.close()
        if self._owns_storage and self._storage is not None:
            await asyncio.to_thread(self._storage.close)
            self._storage = None


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task failed", exc_info=task.exception(), extra={"task": task.get_name()})
