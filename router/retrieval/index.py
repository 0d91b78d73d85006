"""The function vectors of one generation (``router.catalog.records.Generation``) and their usage examples."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Sequence

import numpy as np

from router.catalog.functions import FunctionDef, function_from_payload, point_id
from router.catalog.records import Generation
from router.embedding import Vectors
from router.embedding.batching import pack, unpack
from router.retrieval.companions import CompanionStore
from router.retrieval.examples import ExampleStore
from router.retrieval.scored import ScoredFunction
from router.retrieval.sparse import Frequencies, document_vector, pack_terms, unpack_terms
from router.retrieval.voting import DEFAULT_REACH, Reach
from router.storage.base import Collection, Hit, PointData, Storage


class FunctionStore:
    """The functions of every namespace in one generation's collection, and their usage examples.

    Args:
        collection: the generation's function collection.
        generation: what made its vectors.
        examples: usage examples (requests that led to a call), kept per model.
        companions: the functions runs called together (no vectors: kept across models).
        moves_counts: nothing but this process writes the store (``Catalogs.sole_writer``), so a
            write may move the word counts kept here by what it wrote instead of leaving them to be
            counted again (``counted``); any other writer's counts would miss what others wrote.
    """

    def __init__(
        self,
        collection: Collection,
        generation: Generation,
        examples: ExampleStore,
        companions: CompanionStore,
        *,
        moves_counts: bool = False,
    ) -> None:
        self.collection = collection
        self.generation = generation
        self.examples = examples
        self.companions = companions
        self.moves_counts = moves_counts
        # Each namespace's term frequencies, with the catalog version they were counted for.
        self._frequencies: dict[str, tuple[float | None, Frequencies]] = {}
        # Frequencies moved by this process's writes since their version (kept above), until a version names them.
        self._moved: dict[str, tuple[float | None, Frequencies]] = {}
        # Writes so far: a count that a write overtook may miss it, and is not kept.
        self._writes = 0
        self._counting = threading.Lock()
        # Writes and kept counts change together: a count overtaken by a write is never kept.
        self._keeping = threading.Lock()

    @classmethod
    def open(
        cls, storage: Storage, generation: Generation, *, moves_counts: bool = False, reach: Reach = DEFAULT_REACH
    ) -> FunctionStore:
        """Open (creating when missing) the collection of ``generation``, its model's examples and the companions.

        ``reach``: where the model's cosine says two requests ask the same thing (its examples' reach).
        """
        examples = ExampleStore.open(storage, model=generation.model, dimension=generation.dimension, reach=reach)
        companions = CompanionStore.open(storage)
        return cls(storage.collection(generation.spec), generation, examples, companions, moves_counts=moves_counts)

    def hashes(self, namespace: str) -> dict[str, str]:
        """The content hash of every stored function of ``namespace``, by name."""
        records = self.collection.scroll({"namespace": namespace}, fields=("name", "hash"))
        return {r.payload["name"]: r.payload["hash"] for r in records}

    def list(self, namespace: str) -> builtins.list[FunctionDef]:
        """Every stored function of ``namespace``, sorted by name."""
        records = self.collection.scroll({"namespace": namespace})
        return sorted((function_from_payload(r.payload) for r in records), key=lambda f: f.name)

    def get(self, namespace: str, names: Sequence[str]) -> builtins.list[FunctionDef]:
        """The stored functions of ``namespace`` among ``names``, in the order of ``names``."""
        found = self.definitions(namespace, names)
        return [found[n] for n in dict.fromkeys(names) if n in found]

    def definitions(self, namespace: str, names: Sequence[str]) -> dict[str, FunctionDef]:
        """The stored functions of ``namespace`` among ``names``, by name."""
        ids = [point_id(namespace, n) for n in dict.fromkeys(names)]
        return {
            r.payload["name"]: function_from_payload(r.payload)
            for r in self.collection.retrieve(ids, fields=_DEFINITIONS)
        }

    def count(self, namespace: str | None = None) -> int:
        """How many functions are stored (in one namespace, or in all)."""
        return self.collection.count({"namespace": namespace} if namespace else None)

    def upsert(
        self,
        namespace: str,
        functions: Sequence[FunctionDef],
        vectors: Vectors,
        facets: Sequence[Vectors],
    ) -> None:
        """Write functions with their vectors and facet vectors; ids are deterministic so this is idempotent."""
        sparse = [document_vector(f) for f in functions]
        written = [np.asarray(v.indices, dtype=np.uint32) for v in sparse]
        moved = self._moving(namespace, [point_id(namespace, f.name) for f in functions], written)
        points = [
            PointData(
                id=point_id(namespace, f.name),
                payload={
                    "namespace": namespace,
                    "name": f.name,
                    "hash": f.content_hash,
                    "definition": dict(f.definition),
                    # float16: half the payload of float32, and cosines off by about 1e-3 at most.
                    "facets": pack(facets[i], "<f2"),
                    "terms": pack_terms(sparse[i]),
                    "embedding_model": self.generation.model,
                    "text_template": self.generation.text,
                },
                dense=vectors[i].tolist(),
                sparse=sparse[i],
            )
            for i, f in enumerate(functions)
        ]
        self._write(namespace, moved, lambda: self.collection.upsert(points))

    def frequencies(self, namespace: str, version: float | None = None) -> Frequencies | None:
        """The term frequencies of ``namespace``'s functions, for its requests' IDF.

        Counted from the terms each function's payload lists, once per catalog ``version`` (the
        record's ``updated_at``: a write from another process changes it) and after every write
        here, unless the writer moved them by what it wrote (``counted``); ``None`` asks for what
        was counted last. None for a store whose engine weighs
        the terms by their IDF over the whole collection (written before each catalog had its own).
        """
        if self.generation.spec.sparse_idf:
            return None
        if (kept := self._kept(namespace, version)) is not None:
            return kept
        with self._counting:  # one count at a time: the routes that arrive meanwhile take its result
            if (kept := self._kept(namespace, version)) is not None:
                return kept
            writes = self._writes
            counted = self._count(namespace)
            with self._keeping:
                if writes == self._writes:
                    self._frequencies[namespace] = (version, counted)
        return counted

    def _kept(self, namespace: str, version: float | None) -> Frequencies | None:
        kept = self._frequencies.get(namespace)
        return kept[1] if kept is not None and (version is None or kept[0] == version) else None

    def _count(self, namespace: str) -> Frequencies:
        records = list(self.collection.scroll({"namespace": namespace}, fields=("terms",)))
        documents = [unpack_terms(r.payload["terms"]) for r in records if "terms" in r.payload]
        # Written by a process of the previous version (a replica not upgraded yet): no terms kept.
        bare = [r.id for r in records if "terms" not in r.payload]
        if bare:
            for record in self.collection.retrieve(bare, fields=_DEFINITIONS):
                vector = document_vector(function_from_payload(record.payload))
                documents.append(np.asarray(vector.indices, dtype=np.uint32))
        return Frequencies.of(documents)

    def counted(self, namespace: str, version: float, *, since: float | None) -> bool:
        """Name by ``version`` the frequencies this process's writes moved from those of version ``since``.

        A writer calls it once its record names the catalog's new version: moving the counts
        by what was written spares reading every function's terms again (0.16 s at 10,000
        functions). False when nothing was moved from ``since`` (counted from another version,
        or never): the next ``frequencies`` counts.
        """
        with self._keeping:
            moved = self._moved.pop(namespace, None)
            if moved is None or moved[0] != since:
                return False
            self._frequencies[namespace] = (version, moved[1])
        return True

    def _moving(
        self, namespace: str, ids: Sequence[str], written: Sequence[np.ndarray[tuple[int], np.dtype[np.uint32]]]
    ) -> tuple[float | None, Frequencies] | None:
        """The kept frequencies of ``namespace`` once ``ids`` hold the ``written`` terms (None: none to move)."""
        base = self._moved.get(namespace) or self._frequencies.get(namespace)
        if not self.moves_counts or base is None:
            return None
        before = self.collection.retrieve(list(dict.fromkeys(ids)), fields=("terms",)) if ids else []
        if any("terms" not in r.payload for r in before):
            return None  # written by a replica of the previous version: counted afresh
        removed = [unpack_terms(r.payload["terms"]) for r in before]
        return base[0], base[1].changed(removed, written)

    @property
    def writes(self) -> int:
        """How many writes this store has made: a stamp for ``gone``."""
        return self._writes

    def gone(self, namespace: str, *, unless_written_since: int | None = None) -> None:
        """The catalog of ``namespace`` is gone: drop its word counts kept here.

        With ``unless_written_since`` (a ``writes`` stamp taken before the catalog was found
        gone), nothing is dropped once a write came since: it may have made the catalog anew.
        """
        with self._keeping:
            if unless_written_since is None or unless_written_since == self._writes:
                self._frequencies.pop(namespace, None)
                self._moved.pop(namespace, None)

    def _write(self, namespace: str, moved: tuple[float | None, Frequencies] | None, write: Callable[[], None]) -> None:
        try:
            write()
        except BaseException:
            self._wrote(namespace)  # it may have landed all the same (a timeout, too few replicas): count afresh
            raise
        self._wrote(namespace, moved)

    def _wrote(self, namespace: str, moved: tuple[float | None, Frequencies] | None = None) -> None:
        with self._keeping:
            self._writes += 1
            self._frequencies.pop(namespace, None)
            if moved is None:
                self._moved.pop(namespace, None)
            else:
                self._moved[namespace] = moved

    def facets(self, namespace: str, names: Sequence[str]) -> dict[str, Vectors]:
        """The facet vectors of the named functions of ``namespace`` (one row per facet), by name."""
        records = self.collection.retrieve([point_id(namespace, n) for n in dict.fromkeys(names)], fields=_FACETS)
        # A generation written before facets were kept has none; it is served until its rebuild.
        dimension = self.generation.dimension
        return {
            r.payload["name"]: unpack(r.payload["facets"], "<f2", dimension) for r in records if "facets" in r.payload
        }

    def remove(self, namespace: str, names: Sequence[str]) -> None:
        """Delete functions of ``namespace`` by name, with their usage examples."""
        ids = [point_id(namespace, n) for n in names]
        self._write(namespace, self._moving(namespace, ids, []), lambda: self.collection.delete(ids))
        self.forget_examples(namespace, names)

    def forget_examples(self, namespace: str, names: Sequence[str]) -> None:
        """Delete the usage examples and companion runs of functions (removed, or changed so that they may not fit)."""
        if names:
            self.examples.forget(namespace, names)
            self.companions.forget(namespace, names)

    def existing(self, namespace: str, names: Sequence[str]) -> dict[str, str]:
        """The content hash of each named function that ``namespace`` holds."""
        records = self.collection.retrieve([point_id(namespace, n) for n in dict.fromkeys(names)])
        return {r.payload["name"]: r.payload["hash"] for r in records}

    def search(self, namespace: str, vector: Sequence[float], *, limit: int) -> builtins.list[ScoredFunction]:
        """The ``limit`` functions of ``namespace`` nearest to ``vector``."""
        hits = self.collection.search(dense=vector, match={"namespace": namespace}, limit=limit, fields=HIT_FIELDS)
        return self._scored(namespace, hits)

    def score_names(
        self, namespace: str, vector: Sequence[float], names: Sequence[str]
    ) -> builtins.list[ScoredFunction]:
        """The named functions of ``namespace`` with their similarity to ``vector``, best first."""
        if not names:
            return []
        match = {"namespace": namespace, "name": list(names)}
        hits = self.collection.search(dense=vector, match=match, limit=len(names), fields=HIT_FIELDS)
        return self._scored(namespace, hits)

    def _scored(self, namespace: str, hits: Sequence[Hit]) -> builtins.list[ScoredFunction]:
        found = self.definitions(namespace, [h.payload["name"] for h in hits])
        return [ScoredFunction(found[h.payload["name"]], h.score) for h in hits if h.payload["name"] in found]


# The payload a search needs to name a function and tell its version; what a definition is read from.
HIT_FIELDS = ("name", "hash")
_DEFINITIONS = ("name", "definition")
_FACETS = ("name", "facets")
