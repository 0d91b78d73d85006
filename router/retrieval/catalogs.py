"""The catalogs as routes read them: their records, and the function index of the generation served.

A process has one ``Catalogs``. The writer (``sync.service.CatalogService``) opens it, chooses
the generation it serves and switches it after a rebuild; routes only read it. In server mode,
a process follows the generation another process made active.

With ``ROUTER_ROUTE_FAIL_OPEN=true`` a route whose storage is down answers with its
namespace's pinned functions (the catalog's and the request's) instead of a 503, flagged
``degraded``. What is pinned must then be known without storage: ``PinnedFunctions`` reads it
once at start, and learns from every catalog write and every successful route since.

A catalog may also be embedded in a second, multilingual space (``ROUTER_MULTILINGUAL_*``):
a turn that is not English (``router.embedding.language``) is routed there, with that
space's usage examples and memories; an English turn is routed in the default space exactly
as without it. The writer (``sync.multilingual``) keeps it in step with the default space;
while it lags for a namespace, or its embedding service fails, such a turn is routed in the
default space instead (logged, and counted by ``fell_back``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from router.catalog.functions import FunctionDef
from router.catalog.records import CatalogRecord, Generation, MetaStore
from router.common.errors import NamespaceNotFound, Unavailable
from router.embedding import DEFAULT_MODEL, Embedder, EmbedderPool, Vectors
from router.embedding.language import ENGLISH, LanguageIdentifier
from router.retrieval.index import FunctionStore
from router.retrieval.voting import DEFAULT_REACH, Reach
from router.storage.base import Storage

log = logging.getLogger(__name__)

# Definitions kept per namespace beyond its catalog pins (functions requests pinned).
KNOWN_PER_NAMESPACE = 256


class PinnedFunctions:
    """Each namespace's catalog pins and the definitions of the functions pinned in it lately."""

    def __init__(self) -> None:
        self._pins: dict[str, tuple[str, ...]] = {}
        self._known: dict[str, dict[str, FunctionDef]] = {}

    def written(
        self, namespace: str, functions: Sequence[FunctionDef] | Mapping[str, FunctionDef], pinned: Sequence[str]
    ) -> None:
        """A catalog now holds exactly ``functions`` (a list, or by name): forget what it no longer has."""
        by_name = functions if isinstance(functions, Mapping) else {f.name: f for f in functions}
        known = {name: by_name[name] for name in self._known.get(namespace, {}) if name in by_name}
        known.update((name, by_name[name]) for name in pinned if name in by_name)
        self._pins[namespace] = tuple(pinned)
        self._known[namespace] = known

    def deleted(self, namespace: str) -> None:
        """A catalog is gone."""
        self._pins.pop(namespace, None)
        self._known.pop(namespace, None)

    def seen(self, namespace: str, pinned: Sequence[str], functions: Sequence[FunctionDef]) -> None:
        """A route read the catalog's pins and these pinned functions from storage."""
        self._pins[namespace] = tuple(pinned)
        known = self._known.setdefault(namespace, {})
        for function in functions:
            known.pop(function.name, None)
            known[function.name] = function
        if len(known) > KNOWN_PER_NAMESPACE:
            keep = set(pinned)
            for name in [n for n in known if n not in keep][: len(known) - KNOWN_PER_NAMESPACE]:
                del known[name]

    def answer(self, namespace: str, requested: Sequence[str]) -> list[FunctionDef] | None:
        """The pinned functions known for a route, or None when the namespace is not known here."""
        if namespace not in self._pins:
            return None
        known = self._known.get(namespace, {})
        names = dict.fromkeys([*self._pins[namespace], *requested])
        return [known[name] for name in names if name in known]


@dataclass(frozen=True)
class ActiveIndex:
    """What routing uses right now: a generation's store and its embedder.

    ``lexical_weight``, when set, replaces the route settings' in this index: the multilingual
    space sets 0, since the words of a turn in one language rarely match a catalog written in
    another, and BM25 would then rank functions by stray names and loanwords. ``vague``, when
    set, replaces the route settings' vague mark: each model has its own scale of cosines.
    """

    store: FunctionStore
    embedder: Embedder
    lexical_weight: float | None = None
    vague: float | None = None

    def lexical(self, weight: float) -> float:
        """The lexical weight of this index, ``weight`` (the route settings') unless it sets its own."""
        return weight if self.lexical_weight is None else self.lexical_weight

    def vague_mark(self, mark: float) -> float:
        """The vague mark of this index, ``mark`` (the route settings') unless it sets its own."""
        return mark if self.vague is None else self.vague

    @property
    def generation(self) -> Generation:
        """The generation being served."""
        return self.store.generation


class Catalogs:
    """The known catalogs and the function index routes use.

    Args:
        storage: the open storage.
        embedders: loaded models (the model of the generation served among them).
        sole_writer: nothing but this process writes the store (embedded storage, which one
            process holds), so its function stores move their word counts by what they write.
        reaches: each model's ``Reach`` (by the model's name or service identity): where its
            cosine says two requests ask the same thing; all-MiniLM-L6-v2's for a model not named.

    Attributes:
        pins: each catalog's pinned functions kept for routes that cannot reach storage (None
            unless routes fail open); the writer keeps them equal to what it writes.
        multilingual: the second, multilingual space once built (None without one).
        behind: namespaces whose functions the multilingual space does not hold as they are
            (a write to it failed); the writer catches up.
        memories_behind: the multilingual space's memories may lag the default space's (not
            yet copied, or a copy failed); the writer catches up.
        languages: tells a turn's language.
        fell_back: told the reason ("behind", "unavailable") of each non-English turn routed in
            the default space.
    """

    def __init__(
        self,
        storage: Storage,
        embedders: EmbedderPool,
        *,
        sole_writer: bool = False,
        reaches: Mapping[str, Reach] | None = None,
    ) -> None:
        self.storage = storage
        self.embedders = embedders
        self.sole_writer = sole_writer
        self.reaches = dict(reaches or {})
        self._meta: MetaStore | None = None
        self._index: ActiveIndex | None = None
        self.pins: PinnedFunctions | None = None
        self.multilingual: ActiveIndex | None = None
        self.behind: set[str] = set()
        self.memories_behind = True
        self.languages = LanguageIdentifier()
        self.fell_back: Callable[[str], None] | None = None

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

    async def load(self, model: str) -> Embedder:
        """The embedder of ``model``, loaded knowing the dimension of its vectors the store holds:
        a service down when it loads still serves what is stored (failing until it answers)."""
        dimension = await asyncio.to_thread(self.meta.recorded_dimension, model)
        return await self.embedders.get(model, dimension=dimension)

    async def serve(self, generation: Generation) -> ActiveIndex:
        """Serve ``generation`` from now on: open its store and load its model."""
        embedder = await self.embedders.get(generation.model, dimension=generation.dimension)
        store = await asyncio.to_thread(self.open_store, generation)
        self._index = ActiveIndex(store, embedder)
        return self._index

    def open_store(self, generation: Generation) -> FunctionStore:
        """The function store of ``generation`` (blocking; created when missing)."""
        reach = self.reaches.get(generation.model, DEFAULT_REACH)
        return FunctionStore.open(self.storage, generation, moves_counts=self.sole_writer, reach=reach)

    def language(self, text: str) -> str:
        """The language a turn of ``text`` is split in (``router.retrieval.parts``).

        Its own when a model may read it: with a multilingual space (even while the turn falls
        back to the default space), or a default model other than the packaged all-MiniLM-L6-v2,
        which reads English only (and whose router then need not load the identifier).
        """
        english_only = self._index is not None and self._index.embedder.model_name == DEFAULT_MODEL
        return ENGLISH if self.multilingual is None and english_only else self.languages.language(text)

    def space(self, namespace: str, text: str) -> ActiveIndex:
        """The index a turn of ``text`` is routed in: the multilingual one when it is not English."""
        second = self.multilingual
        if second is None or self.languages.english(text):
            return self.index
        if namespace in self.behind:
            self._fall_back("behind", namespace, "the multilingual space lags this catalog")
            return self.index
        return second

    async def embed_turn(self, namespace: str, texts: Sequence[str]) -> tuple[ActiveIndex, Vectors]:
        """The index of the turn's space (``space`` of its first text) and the query vectors of ``texts`` there.

        A failure of the multilingual space's embedding service routes the turn in the default space.
        """
        index = self.space(namespace, texts[0])
        if index is self.multilingual:
            try:
                return index, await index.embedder.query(texts)
            except Exception as exc:
                self._fall_back("unavailable", namespace, str(exc) or type(exc).__name__)
            index = self.index
        return index, await index.embedder.query(texts)

    def _fall_back(self, reason: str, namespace: str, detail: str) -> None:
        log.warning(
            "non-English turn routed in the default space",
            extra={"reason": reason, "namespace": namespace, "detail": detail},
        )
        if self.fell_back is not None:
            self.fell_back(reason)

    async def keep_pins(self) -> None:
        """Keep every catalog's pins and pinned functions, read from storage, for routes that cannot reach it."""
        pins = PinnedFunctions()
        records = await self.records() if self.ready else {}
        for namespace, record in records.items():
            functions = await asyncio.to_thread(self.index.store.get, namespace, record.pinned) if record.pinned else []
            pins.seen(namespace, record.pinned, functions)
        self.pins = pins

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
        stores = [index.store for index in (self._index, self.multilingual) if index is not None]
        stamps = [store.writes for store in stores]
        record = self.meta.catalog(namespace)
        if record is None:  # perhaps deleted by another process: its word counts go, unless a write made it anew
            for store, stamp in zip(stores, stamps, strict=True):
                store.gone(namespace, unless_written_since=stamp)
            raise NamespaceNotFound(f"no catalog named {namespace!r}", field="namespace")
        return record

    def gone(self, namespace: str) -> None:
        """The writer deleted the catalog of ``namespace``: drop what this process kept of it."""
        if self.pins is not None:
            self.pins.deleted(namespace)
        for index in (self._index, self.multilingual):
            if index is not None:
                index.store.gone(namespace)

    async def functions(self, namespace: str) -> list[FunctionDef]:
        """The stored functions of a known namespace, sorted by name."""
        await self.record(namespace)
        return await asyncio.to_thread(self.index.store.list, namespace)
