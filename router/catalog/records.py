"""Small records about the store itself: the generation in use and the known catalogs.

A *generation* is the set of function vectors made by one model with one text template.
Each generation has its own collection; changing either builds a new one beside the old,
and routing switches to it in one step once it is complete.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from router.storage.base import Collection, CollectionSpec, PointData, Storage

# A handful of points: one shard, so reading the catalogs does not fan out over the cluster.
META = CollectionSpec(name="meta", keyword_fields=("kind",), sharded=False)
_IDS = uuid.UUID("0b6c2f4e-8d7a-4f3b-9e21-5a6c7d8e9f01")
# The spaces a generation is served in: every catalog's, and the multilingual one beside it.
SPACES = ("default", "multilingual")


# Bump when what a vector means changes (its text pipeline, its sparse part) so stores rebuild.
# 2: sparse BM25-like vectors from router.retrieval.sparse beside every dense one.
# 3: each function's facet vectors in its payload (its own, then ``texts.parameter_facets``).
# 4: BM25's IDF per catalog: no engine IDF over the collection; each function's terms in its payload.
# 5: "when", "where" and "why" are stop words, as "how", "what" and "who" were.
SCHEMA_VERSION = 5
# The first version whose queries carry their catalog's IDF (the engine's, collection-wide, before).
CATALOG_IDF = 4


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
            sparse_idf=self.version < CATALOG_IDF,
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


def _id(key: str) -> str:
    return str(uuid.uuid5(_IDS, key))


def _generation_id(space: str) -> str:
    return _id("generation" if space == "default" else f"generation/{space}")


@dataclass(frozen=True)
class CatalogRecord:
    """A known namespace: where its functions came from and when it last changed."""

    namespace: str
    source: str
    count: int
    updated_at: float = field(compare=False)
    pinned: tuple[str, ...] = ()

    def written_from(self, source: str, pinned: Sequence[str]) -> bool:
        """Whether this record already says the catalog came from ``source`` with these pins."""
        return (self.source, self.pinned) == (source, tuple(pinned))

    @classmethod
    def from_payload(cls, payload: dict[str, Any]) -> CatalogRecord:
        """Read a record back from its stored form."""
        return cls(
            payload["namespace"],
            payload["source"],
            int(payload["count"]),
            float(payload["updated_at"]),
            tuple(payload.get("pinned", ())),
        )


class MetaStore:
    """The meta collection: one point for the active generation, one per catalog."""

    def __init__(self, collection: Collection) -> None:
        self._collection = collection

    @classmethod
    def open(cls, storage: Storage) -> MetaStore:
        """Open the meta collection, creating it when missing."""
        return cls(storage.collection(META))

    def active_generation(self, space: str = "default") -> Generation | None:
        """The generation routing uses in ``space`` (``default`` or ``multilingual``), or None before the first sync."""
        found = self._collection.retrieve([_generation_id(space)])
        return Generation.from_payload(found[0].payload["generation"]) if found else None

    def set_active_generation(self, generation: Generation, space: str = "default") -> None:
        """Switch routing in ``space`` to ``generation`` (one point write: atomic)."""
        payload = {"kind": "generation", "generation": generation.as_payload(), "id": generation.id}
        self._collection.upsert([PointData(id=_generation_id(space), payload=payload)])

    def recorded_dimension(self, model: str) -> int | None:
        """The dimension of ``model``'s vectors when a space serves a generation of it, else None."""
        for space in SPACES:
            generation = self.active_generation(space)
            if generation is not None and generation.model == model:
                return generation.dimension
        return None

    def catalogs(self) -> dict[str, CatalogRecord]:
        """Every known catalog, by namespace."""
        records = (CatalogRecord.from_payload(r.payload) for r in self._collection.scroll({"kind": "catalog"}))
        return {r.namespace: r for r in sorted(records, key=lambda r: r.namespace)}

    def catalog(self, namespace: str) -> CatalogRecord | None:
        """The record of one catalog, or None when the namespace is unknown."""
        found = self._collection.retrieve([_id(f"catalog/{namespace}")])
        return CatalogRecord.from_payload(found[0].payload) if found else None

    def put_catalog(self, namespace: str, *, source: str, count: int, pinned: Sequence[str] = ()) -> CatalogRecord:
        """Record that ``namespace`` now holds ``count`` functions from ``source``."""
        # In microseconds, a version comes back from storage as written; a raw time.time() came back
        # one unit in the last place off from Qdrant Edge about one time in eight.
        record = CatalogRecord(namespace, source, count, round(time.time(), 6), tuple(pinned))
        payload = {"kind": "catalog", **record.__dict__, "pinned": list(pinned)}
        self._collection.upsert([PointData(id=_id(f"catalog/{namespace}"), payload=payload)])
        return record

    def delete_catalog(self, namespace: str) -> None:
        """Forget a catalog."""
        self._collection.delete([_id(f"catalog/{namespace}")])
