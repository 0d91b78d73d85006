"""The one writer of catalogs: reconcile, delete, and switch generations without downtime."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial

from router.catalog.functions import FunctionDef
from router.catalog.limits import LimitSettings, check_count
from router.catalog.records import Generation, MetaStore
from router.common.errors import NamespaceNotFound
from router.embedding import Embedder, EmbedderPool
from router.retrieval.catalogs import ActiveIndex, Catalogs
from router.retrieval.index import FunctionStore
from router.retrieval.texts import template
from router.retrieval.voting import SAME, Reach
from router.sessions.reembed import drop_memories, reembed_memories
from router.storage.base import Storage
from sync.diff import Summary
from sync.freed_memory import FreedMemory
from sync.multilingual import MultilingualWriter
from sync.reconcile import ProgressFactory, SyncCounters, SyncLog, reconcile, reembed_examples
from sync.word_counts import WordCounts

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
        counters: where reconciles are counted (the process's metrics).
        limits: how many functions a catalog may hold, from any source.
        sole_writer: nothing but this service writes the store (embedded storage, which one
            process holds): what it wrote is what is stored, so its diffs need not read the
            stored hashes back (a tenth of a second at 10,000 functions).
        multilingual: the model of a second, multilingual space (a remote service's identity),
            built by ``build_multilingual`` and written with every catalog (``sync.multilingual``).
        multilingual_lexical: the words' weight in that space (0 by default).
        multilingual_vague: that space's vague mark (the route settings' when None).
        multilingual_text: the function text template of that space (``text`` when None).
        same_request: the default model's cosine at which two requests ask the same thing
            (``router.retrieval.voting.Reach``: how far one stored run reaches).
        multilingual_same_request: the multilingual model's (needed with ``multilingual``: each model
            has its own, multilingual-e5-small's is 0.9).

    Attributes:
        catalogs: what routes read: the records and the generation served, which this writer
            opens and switches.
        log: each namespace's last sync in this process, and the embeddings under way.
    """

    def __init__(
        self,
        storage: Storage,
        embedders: EmbedderPool,
        *,
        model: str,
        text: str,
        progress: ProgressFactory | None = None,
        counters: SyncCounters | None = None,
        limits: LimitSettings | None = None,
        sole_writer: bool = False,
        multilingual: str | None = None,
        multilingual_lexical: float | None = 0.0,
        multilingual_vague: float | None = None,
        multilingual_text: str | None = None,
        same_request: float = SAME,
        multilingual_same_request: float | None = None,
    ) -> None:
        for name in (text, multilingual_text or text):
            template(name)  # reject an unknown template before anything is loaded
        if multilingual == model:
            raise ValueError(f"the multilingual model {model!r} is the default model; choose another or unset it")
        if multilingual and multilingual_same_request is None:
            raise ValueError(
                f"multilingual_same_request is needed with the multilingual model {multilingual!r}: "
                "the cosine at which that model reads two requests as the same one"
            )
        self._storage = storage
        self._embedders = embedders
        self._model = model
        self._text = text
        reaches = {model: Reach(same_request)}
        if multilingual and multilingual_same_request is not None:
            reaches[multilingual] = Reach(multilingual_same_request)
        self.catalogs = Catalogs(storage, embedders, sole_writer=sole_writer, reaches=reaches)
        self.counters = counters or SyncCounters()
        self.log = SyncLog()
        self._reconcile = partial(reconcile, progress=progress, sync_log=self.log, counters=self.counters)
        self._lock = asyncio.Lock()
        self._rebuilding = asyncio.Lock()
        self._wanted: Generation | None = None
        self._limits = limits or LimitSettings()
        self._freed = FreedMemory()
        # namespace -> (the store written, each function's content hash as written there)
        self._written: dict[str, tuple[FunctionStore, dict[str, str]]] | None = {} if sole_writer else None
        # Namespaces whose functions changed but whose record or multilingual write has not followed.
        self._unfinished: set[str] = set()
        self._words = WordCounts(self.catalogs)
        self.multilingual = (
            MultilingualWriter(
                storage,
                self.catalogs,
                model=multilingual,
                text=multilingual_text or text,
                reconcile=self._reconcile,
                lexical_weight=multilingual_lexical,
                vague=multilingual_vague,
                failed=self.counters.multilingual_failed,
            )
            if multilingual
            else None
        )

    @property
    def meta(self) -> MetaStore:
        """The records of the store (after ``open``)."""
        return self.catalogs.meta

    @property
    def index(self) -> ActiveIndex:
        """The index routes use now; 503 while no generation can be served."""
        return self.catalogs.index

    @property
    def rebuild_pending(self) -> bool:
        """Whether the wanted generation differs from the one served."""
        served = self.catalogs.index.generation.id if self.catalogs.ready else None
        return self._wanted is not None and self._wanted.id != served

    async def open(self) -> None:
        """Open storage records and serve a generation: the wanted one, or the active one until it is rebuilt."""
        meta = await self.catalogs.open()
        embedder = await self.catalogs.load(self._model)
        self._wanted = wanted = Generation(self._model, self._text, embedder.dimension)
        active = await asyncio.to_thread(meta.active_generation)
        if active is None:
            await asyncio.to_thread(meta.set_active_generation, wanted)
        if active is None or active.id == wanted.id:
            await self.catalogs.serve(wanted)
            return
        log.info("generation change", extra={"from": active.as_payload(), "to": wanted.as_payload()})
        try:
            await self.catalogs.serve(active)
        except Exception:
            log.exception("cannot load the previous model; routing waits for the rebuild")

    async def rebuild(self) -> None:
        """Build the wanted generation beside the served one, then switch over atomically.

        Concurrent calls build once: a caller that finds the switch already done returns.
        """
        async with self._rebuilding:
            target = self._wanted
            if target is None or not self.rebuild_pending:
                return
            meta = self.meta
            previous = await asyncio.to_thread(meta.active_generation)
            old = await asyncio.to_thread(self.catalogs.open_store, previous) if previous else None
            new = await asyncio.to_thread(self.catalogs.open_store, target)
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
                    await self._reconcile(new, embedder, namespace, [])
                await reembed_examples(old, new, embedder, after=examples)
                await asyncio.to_thread(meta.set_active_generation, target)
                self.catalogs.switch(ActiveIndex(new, embedder))
            log.info("generation switched", extra={"generation": target.id, "model": target.model, "text": target.text})
            if previous is not None and previous.id != target.id:
                await asyncio.to_thread(self._storage.drop, previous.spec.name)
                if previous.model != target.model:
                    await asyncio.to_thread(
                        drop_memories, self._storage, model=previous.model, dimension=previous.dimension
                    )
                    self._embedders.release(previous.model)

    async def build_multilingual(self) -> None:
        """Build (when needed) and serve the multilingual space; raises while its model cannot be reached."""
        if self.multilingual is not None:
            await self.multilingual.build(self._lock)

    async def catch_up_multilingual(self) -> None:
        """Write to the multilingual space what failed to reach it (or build it, not yet served)."""
        if self.multilingual is None:
            return
        if not self.multilingual.ready:
            await self.build_multilingual()
            return
        async with self._lock:
            await self.multilingual.catch_up()

    async def _copy(self, old: FunctionStore | None, new: FunctionStore, embedder: Embedder) -> set[str]:
        catalogs = await asyncio.to_thread(self.meta.catalogs)
        for namespace in catalogs:
            functions = await asyncio.to_thread(old.list, namespace) if old else []
            await self._reconcile(new, embedder, namespace, functions)
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

        Raises:
            InvalidRequest: more functions than a catalog may hold (``ROUTER_LIMIT_FUNCTIONS``).
        """
        check_count("functions", len(functions), self._limits)
        try:
            async with self._lock:
                index = self.index
                record = await asyncio.to_thread(self.meta.catalog, namespace)
                stored = self._take_written(index.store, namespace)
                summary = await self._reconcile(index.store, index.embedder, namespace, functions, stored=stored)
                if self._written is not None:
                    self._written[namespace] = (index.store, {f.name: f.content_hash for f in functions})
                # A change whose record failed to follow is finished by the next apply, which finds
                # nothing left to embed: its record and multilingual space must follow even so.
                changed = summary.changed or namespace in self._unfinished
                if changed:
                    self._unfinished.add(namespace)
                put = partial(self.meta.put_catalog, namespace, source=source, count=len(functions), pinned=pinned)
                if changed or record is None or not record.written_from(source, pinned):
                    await asyncio.to_thread(put)
                if self.catalogs.pins is not None:
                    self.catalogs.pins.written(namespace, functions, pinned)
                if self.multilingual is not None and (changed or namespace in self.catalogs.behind):
                    await self.multilingual.apply(namespace, functions)
                    if changed:
                        # Written after the record: a new version has other processes count its words anew.
                        await asyncio.to_thread(put)
                self._unfinished.discard(namespace)
        except Exception as exc:
            self.counters.sync_failed(source)
            self.log.failed(namespace, source, str(exc) or type(exc).__name__)
            raise
        if changed:
            await self._words.after_change(namespace, since=record.updated_at if record is not None else None)
        self.counters.synced(source, summary)
        self.log.synced(source, summary)
        if summary.changed:
            log.info("catalog reconciled", extra={"source": source, **summary.counts(), "namespace": namespace})
        self._freed.after_apply(len(functions))
        return summary

    async def remove(self, namespace: str) -> Summary:
        """Delete a namespace and all its functions."""
        async with self._lock:
            self._take_written(self.index.store, namespace)
            record = await asyncio.to_thread(self.meta.catalog, namespace)
            if record is None:
                raise NamespaceNotFound(f"no catalog named {namespace!r}", field="namespace")
            index = self.index
            summary = await self._reconcile(index.store, index.embedder, namespace, [])
            await asyncio.to_thread(self.meta.delete_catalog, namespace)
            self._unfinished.discard(namespace)
            self.catalogs.gone(namespace)
            if self.multilingual is not None:
                await self.multilingual.apply(namespace, [])
        self.counters.synced(record.source, summary)
        self.log.synced(record.source, summary)
        log.info("catalog deleted", extra={"namespace": namespace, "removed": summary.removed})
        return summary

    async def settle(self) -> None:
        """Wait for the word counts that follow changes (before the storage closes)."""
        await self._words.settle()

    def _take_written(self, store: FunctionStore, namespace: str) -> dict[str, str] | None:
        """What this writer last wrote to ``namespace`` in ``store``, taken out until a write succeeds."""
        written = self._written.pop(namespace, None) if self._written is not None else None
        return written[1] if written is not None and written[0] is store else None
