"""The function vectors of one generation, and the pointer to the generation in use.

A *generation* is the set of function vectors made by one model with one text template.
Each generation has its own collection; changing either builds a new one beside the old,
and routing switches to it in one step once it is complete.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from router.catalog import FunctionDef, function_from_payload, point_id
from router.embedding import Embedder, Vectors
from router.sparse import document_vector
from router.storage.base import Collection, CollectionSpec, Hit, PointData, SparseVector, Storage
from router.texts import TextBuilder, template

if TYPE_CHECKING:
    from router.usage import ExampleStore

# Bump when what a vector means changes (its text pipeline, its sparse part) so stores rebuild.
# 2: sparse BM25-like vectors from router.sparse beside every dense one.
SCHEMA_VERSION = 2


@dataclass(frozen=True)
class Generation:
    """Which model and text template made a set of function vectors."""

    model: str
    text: str
    dimension: int
    version: int = SCHEMA_VERSION

    @property
    def id(self) -> str:
        """A short stable id naming the generation's collection."""
        key = f"{self.model}|{self.text}|{self.dimension}|{self.version}"
        return hashlib.sha256(key.encode()).hexdigest()[:12]

    @property
    def spec(self) -> CollectionSpec:
        """The collection holding this generation's vectors."""
        return CollectionSpec(
            name=f"functions-{self.id}",
            dense_size=self.dimension,
            sparse=True,
            tenant_field="namespace",
            keyword_fields=("name",),
        )

    def as_payload(self) -> dict[str, Any]:
        """The generation as stored in the meta collection."""
        return {"model": self.model, "text": self.text, "dimension": self.dimension, "version": self.version}

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> Generation:
        """Read a generation back from its stored form."""
        return cls(str(payload["model"]), str(payload["text"]), int(payload["dimension"]), int(payload["version"]))


@dataclass(frozen=True)
class ScoredFunction:
    """A function found by a search, with its similarity score."""

    function: FunctionDef
    score: float


@dataclass(frozen=True)
class Candidate:
    """A function a request may want, with every signal retrieval has about it.

    Attributes:
        function: the function.
        cosine: cosine similarity of the request to the function's text.
        lexical: the function's BM25 score for the request (0 when no term matches).
        example: cosine similarity of the request to the closest usage example of the
            function, or None when it has none near the request.
    """

    function: FunctionDef
    cosine: float
    lexical: float = 0.0
    example: float | None = None


class FunctionStore:
    """The functions of every namespace in one generation's collection, and their usage examples.

    Args:
        collection: the generation's function collection.
        generation: what made its vectors.
        examples: usage examples (requests that led to a call), kept per model; None disables them.
    """

    def __init__(self, collection: Collection, generation: Generation, examples: ExampleStore | None = None) -> None:
        self.collection = collection
        self.generation = generation
        self.examples = examples

    @classmethod
    def open(cls, storage: Storage, generation: Generation) -> FunctionStore:
        """Open (creating when missing) the collection of ``generation`` and its model's examples."""
        from router.usage import ExampleStore  # usage reads messages through retrieval, which needs this module

        examples = ExampleStore.open(storage, model=generation.model, dimension=generation.dimension)
        return cls(storage.collection(generation.spec), generation, examples)

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
        records = self.collection.retrieve([point_id(namespace, n) for n in dict.fromkeys(names)])
        found = {r.payload["name"]: function_from_payload(r.payload) for r in records}
        return [found[n] for n in dict.fromkeys(names) if n in found]

    def count(self, namespace: str | None = None) -> int:
        """How many functions are stored (in one namespace, or in all)."""
        return self.collection.count({"namespace": namespace} if namespace else None)

    def upsert(
        self,
        namespace: str,
        functions: Sequence[FunctionDef],
        vectors: Vectors,
        sparse: Sequence[SparseVector] | None = None,
    ) -> None:
        """Write functions with their vectors; ids are deterministic so this is idempotent.

        Sparse vectors are computed with ``router.sparse.document_vector`` when not given.
        """
        if sparse is None:
            sparse = [document_vector(f) for f in functions]
        points = [
            PointData(
                id=point_id(namespace, f.name),
                payload={
                    "namespace": namespace,
                    "name": f.name,
                    "hash": f.content_hash,
                    "definition": dict(f.definition),
                    "embedding_model": self.generation.model,
                    "text_template": self.generation.text,
                },
                dense=vectors[i].tolist(),
                sparse=sparse[i],
            )
            for i, f in enumerate(functions)
        ]
        self.collection.upsert(points)

    def remove(self, namespace: str, names: Sequence[str]) -> None:
        """Delete functions of ``namespace`` by name, with their usage examples."""
        self.collection.delete([point_id(namespace, n) for n in names])
        self.forget_examples(namespace, names)

    def forget_examples(self, namespace: str, names: Sequence[str]) -> None:
        """Delete the usage examples of functions (removed, or changed so that they may no longer fit)."""
        if self.examples is not None and names:
            self.examples.forget(namespace, names)

    def existing(self, namespace: str, names: Sequence[str]) -> dict[str, str]:
        """The content hash of each named function that ``namespace`` holds."""
        records = self.collection.retrieve([point_id(namespace, n) for n in dict.fromkeys(names)])
        return {r.payload["name"]: r.payload["hash"] for r in records}

    def search(self, namespace: str, vector: Sequence[float], *, limit: int) -> builtins.list[ScoredFunction]:
        """The ``limit`` functions of ``namespace`` nearest to ``vector``."""
        hits = self.collection.search(dense=vector, match={"namespace": namespace}, limit=limit)
        return [_scored(h) for h in hits]

    def score_names(
        self, namespace: str, vector: Sequence[float], names: Sequence[str]
    ) -> builtins.list[ScoredFunction]:
        """The named functions of ``namespace`` with their similarity to ``vector``, best first."""
        if not names:
            return []
        hits = self.collection.search(
            dense=vector, match={"namespace": namespace, "name": list(names)}, limit=len(names)
        )
        return [_scored(h) for h in hits]

    def candidates(
        self,
        namespace: str,
        dense: Sequence[float],
        sparse: SparseVector,
        *,
        limit: int,
        examples: bool = True,
    ) -> builtins.list[Candidate]:
        """The functions of ``namespace`` near a request by meaning, by words or by past usage.

        The ``limit`` best of each signal are united; every candidate then gets its exact
        cosine and BM25 score, so no signal is guessed for a function another one found.

        Args:
            namespace: the catalog.
            dense: the request's embedding.
            sparse: the request's ``router.sparse.query_vector``.
            limit: how many to take from each signal.
            examples: whether usage examples count.
        """
        match = {"namespace": namespace}
        found: dict[str, FunctionDef] = {}
        cosine: dict[str, float] = {}
        lexical: dict[str, float] = {}
        for hit in self.collection.search(dense=dense, match=match, limit=limit):
            found[hit.payload["name"]] = function_from_payload(hit.payload)
            cosine[hit.payload["name"]] = hit.score
        complete_lexical = True
        if sparse.indices:
            hits = self.collection.search(sparse=sparse, match=match, limit=limit)
            # A sparse search returns every point sharing a term, up to the limit: below it, the rest score 0.
            complete_lexical = len(hits) < limit
            for hit in hits:
                found.setdefault(hit.payload["name"], function_from_payload(hit.payload))
                lexical[hit.payload["name"]] = hit.score
        near = self.examples.nearest(namespace, dense, limit=limit) if examples and self.examples else {}
        unscored = [name for name in dict.fromkeys([*found, *near]) if name not in cosine]
        for hit in self._named(namespace, dense, unscored):
            found.setdefault(hit.payload["name"], function_from_payload(hit.payload))
            cosine[hit.payload["name"]] = hit.score
        if not complete_lexical:
            unmatched = [name for name in found if name not in lexical]
            lexical.update((h.payload["name"], h.score) for h in self._named(namespace, sparse, unmatched))
        return [
            Candidate(
                function,
                cosine.get(name, 0.0),
                lexical.get(name, 0.0),
                _example_score(near.get(name), function),
            )
            for name, function in found.items()
        ]

    def named(
        self, namespace: str, dense: Sequence[float], sparse: SparseVector, names: Sequence[str]
    ) -> builtins.list[Candidate]:
        """The named functions of ``namespace`` with their cosine and BM25 score for a request."""
        found = {
            h.payload["name"]: (function_from_payload(h.payload), h.score) for h in self._named(namespace, dense, names)
        }
        matched = self._named(namespace, sparse, list(found)) if sparse.indices else []
        lexical = {h.payload["name"]: h.score for h in matched}
        return [Candidate(function, cosine, lexical.get(name, 0.0)) for name, (function, cosine) in found.items()]

    def _named(self, namespace: str, query: Sequence[float] | SparseVector, names: Sequence[str]) -> builtins.list[Hit]:
        if not names:
            return []
        match = {"namespace": namespace, "name": list(names)}
        if isinstance(query, SparseVector):
            return self.collection.search(sparse=query, match=match, limit=len(names))
        return self.collection.search(dense=query, match=match, limit=len(names))


def _example_score(near: tuple[float, str] | None, function: FunctionDef) -> float | None:
    # An example recorded against an older version of the function no longer speaks for it.
    if near is None or near[1] != function.content_hash:
        return None
    return near[0]


def _scored(hit: Hit) -> ScoredFunction:
    return ScoredFunction(function_from_payload(hit.payload), hit.score)


@dataclass(frozen=True)
class ActiveIndex:
    """What routing uses right now: a generation's store, its embedder and text builder."""

    store: FunctionStore
    embedder: Embedder

    @property
    def generation(self) -> Generation:
        """The generation being served."""
        return self.store.generation

    @property
    def text_builder(self) -> TextBuilder:
        """How this generation turns a function into text."""
        return template(self.generation.text)
