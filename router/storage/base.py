"""The storage protocol every Qdrant adapter implements.

The router keeps everything (functions, catalogs, history, memories) in a few named
collections. An adapter maps this small protocol onto one Qdrant engine: Qdrant Edge
in-process (the embedded default) or a Qdrant server through ``qdrant-client``.

Filters are plain equality matches on payload fields (``{"namespace": "travel"}``);
a list value matches any of its items.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

Match = Mapping[str, str | int | bool | Sequence[str]]
DENSE = "dense"
SPARSE = "sparse"
# Dense search breadth on a Qdrant server's HNSW-indexed segments: the least ef measured to keep
# recall@20 against exact search >= 0.99 with margin, worst query included, on real embeddings in a
# multi-tenant collection with Qdrant's default graph. Exact segments ignore it.
HNSW_EF = 1024


class StorageUnavailable(RuntimeError):
    """The storage cannot be reached or opened."""


@dataclass(frozen=True)
class SparseVector:
    """A sparse vector: parallel lists of term indices and weights."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class CollectionSpec:
    """What a collection holds.

    Attributes:
        name: collection name (a directory name in embedded mode).
        dense_size: dimension of the ``dense`` vector (cosine), or None for a payload-only
            collection.
        sparse: whether points carry a ``sparse`` vector (a plain dot product with the query's).
        sparse_idf: whether the engine weighs the sparse terms by their IDF over the whole
            collection (stores written before each catalog had its own, kept until rebuilt).
        tenant_field: payload field indexed as a tenant (``is_tenant=true``).
        keyword_fields: other payload fields indexed as keywords.
        integer_fields: payload fields indexed as integers (ordering, ranges).
        sharded: whether a Qdrant cluster splits it into the configured number of shards;
            False for a collection of a few points, kept in one (replicated) shard.
    """

    name: str
    dense_size: int | None = None
    sparse: bool = False
    sparse_idf: bool = False
    tenant_field: str | None = None
    keyword_fields: tuple[str, ...] = ()
    integer_fields: tuple[str, ...] = ()
    sharded: bool = True


@dataclass(frozen=True)
class PointData:
    """A point to write."""

    id: str
    payload: Mapping[str, Any]
    dense: Sequence[float] | None = None
    sparse: SparseVector | None = None


@dataclass(frozen=True)
class Record:
    """A stored point: its id and payload."""

    id: str
    payload: dict[str, Any] = field(default_factory=dict)


def sorted_by(records: Iterable[Record], field: str) -> list[Record]:
    """``records`` in ``scroll``'s order: by an integer payload field, those lacking it last."""
    return sorted(records, key=lambda r: (field not in r.payload, r.payload.get(field, 0)))


@dataclass(frozen=True)
class Hit:
    """A search result."""

    id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)
    vector: list[float] | None = None  # the dense vector, when the search asked for it


def dense_of(vectors: Any) -> list[float] | None:
    """The dense vector among a point's named vectors, when it came with them."""
    found = vectors.get(DENSE) if isinstance(vectors, dict) else None
    return None if found is None else list(found)  # both engines answer a list of floats


@dataclass(frozen=True)
class Search:
    """One search of a batch: nearest points by the dense vector or by the sparse one.

    Attributes:
        dense: the dense query (used when given).
        sparse: the sparse query (used when no dense one is given; empty finds nothing).
        match: the filter.
        limit: most hits.
        fields: the payload keys each hit carries (all when None).
        vectors: whether each hit carries its dense vector.
    """

    dense: Sequence[float] | None = None
    sparse: SparseVector | None = None
    match: Match | None = None
    limit: int = 10
    fields: Sequence[str] | None = None
    vectors: bool = False


class Collection(Protocol):
    """One named set of points."""

    @property
    def spec(self) -> CollectionSpec: ...

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points by id; durable when it returns."""

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored."""

    def delete_where(self, match: Match) -> None:
        """Delete every point whose payload matches."""

    def retrieve(self, ids: Sequence[str], *, fields: Sequence[str] | None = None) -> list[Record]:
        """Return the points that exist among ``ids`` (any order); ``fields`` as in ``scroll``."""

    def scroll(
        self, match: Match | None = None, *, order_by: str | None = None, fields: Sequence[str] | None = None
    ) -> Iterator[Record]:
        """Iterate over every matching point, ordered by an integer field when given.

        ``fields`` limits the payload returned to those keys (all when None).
        """

    def latest(self, match: Match, *, order_by: str, limit: int) -> list[Record]:
        """The ``limit`` matching points with the highest integer ``order_by``, highest first."""

    def count(self, match: Match | None = None) -> int:
        """Count matching points exactly."""

    def search(
        self,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        match: Match | None = None,
        limit: int = 10,
        fields: Sequence[str] | None = None,
    ) -> list[Hit]:
        """One ``Search``: nearest points by the dense vector, or else by the sparse one."""

    def searches(self, requests: Sequence[Search]) -> list[list[Hit]]:
        """Several searches in one call to the engine, their hits in the order of ``requests``."""


class Storage(Protocol):
    """A Qdrant engine holding named collections."""

    @property
    def location(self) -> str: ...

    def collection(self, spec: CollectionSpec) -> Collection:
        """Open the collection, creating it (and its payload indexes) when missing."""

    def exists(self, name: str) -> bool:
        """Whether a collection of that name exists."""

    def drop(self, name: str) -> None:
        """Remove a collection and all its points; a missing one is ignored."""

    def close(self) -> None:
        """Flush and release everything."""
