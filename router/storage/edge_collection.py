"""One collection as a Qdrant Edge shard: writes, reads and searches through the storage protocol.

The ``edge_*`` functions give Qdrant Edge's forms of the protocol's filters, vectors, payload
selectors, hits and payload indexes.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import qdrant_edge as qe

from router.storage.base import (
    DENSE,
    SPARSE,
    CollectionSpec,
    Hit,
    Match,
    PointData,
    Record,
    Search,
    SparseVector,
    StorageUnavailable,
    dense_of,
    sorted_by,
)

_PAGE = 2048


def edge_filter(match: Match | None) -> qe.Filter | None:
    """All of ``match``'s conditions; a list value matches any of its items."""
    if not match:
        return None
    conditions: list[Any] = []
    for key, value in match.items():
        if isinstance(value, str | int | bool):
            conditions.append(qe.FieldCondition(key=key, match=qe.MatchValue(value)))
        else:
            conditions.append(qe.FieldCondition(key=key, match=qe.MatchAny(list(value))))
    return qe.Filter(must=conditions)


def edge_vectors(point: PointData) -> dict[str, Any]:
    """The named vectors of a point to write."""
    vectors: dict[str, Any] = {}
    if point.dense is not None:
        vectors[DENSE] = [float(x) for x in point.dense]
    if point.sparse is not None and point.sparse.indices:
        vectors[SPARSE] = qe.SparseVector(indices=point.sparse.indices, values=point.sparse.values)
    return vectors


def edge_sparse(vector: SparseVector) -> qe.SparseVector:
    """A sparse vector."""
    return qe.SparseVector(indices=vector.indices, values=vector.values)


def edge_selector(fields: Sequence[str] | None) -> Any:
    """The payload a result carries: ``fields`` only, or all of it when None."""
    return True if fields is None else qe.PayloadSelector.Include(list(fields))


def edge_hit(point: Any) -> Hit:
    """A scored point as a hit."""
    return Hit(str(point.id), float(point.score), dict(point.payload or {}), dense_of(point.vector))


def edge_indexes(spec: CollectionSpec) -> dict[str, Any]:
    """The payload indexes a collection's spec asks for."""
    indexes: dict[str, Any] = {}
    if spec.tenant_field:
        indexes[spec.tenant_field] = qe.KeywordIndexParams(is_tenant=True)
    for name in spec.keyword_fields:
        indexes[name] = qe.KeywordIndexParams()
    for name in spec.integer_fields:
        indexes[name] = qe.IntegerIndexParams()
    return indexes


class EdgeCollection:
    """A collection stored as one Qdrant Edge shard, searched exactly.

    Every call holds the collection's lock, so none runs on a shard being closed.
    """

    def __init__(self, spec: CollectionSpec, shard: qe.EdgeShard) -> None:
        self._spec = spec
        self._shard: qe.EdgeShard | None = shard
        self._lock = threading.Lock()

    @property
    def spec(self) -> CollectionSpec:
        return self._spec

    @contextlib.contextmanager
    def _using(self) -> Iterator[qe.EdgeShard]:
        with self._lock:
            if self._shard is None:
                raise StorageUnavailable(f"collection {self._spec.name} is closed")
            yield self._shard

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points by id."""
        if not points:
            return
        batch = [qe.Point(id=p.id, vector=edge_vectors(p), payload=dict(p.payload)) for p in points]
        with self._using() as shard:
            shard.update(qe.UpdateOperation.upsert_points(batch))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if ids:
            with self._using() as shard:
                shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def delete_where(self, match: Match) -> None:
        """Delete every point whose payload matches."""
        flt = edge_filter(match)
        if flt is None:
            raise ValueError("delete_where needs a non-empty match")
        with self._using() as shard:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))

    def retrieve(self, ids: Sequence[str], *, fields: Sequence[str] | None = None) -> list[Record]:
        """Return the points that exist among ``ids``."""
        if not ids:
            return []
        with self._using() as shard:
            found = shard.retrieve(list(ids), edge_selector(fields), False)
        return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in found]

    def scroll(
        self, match: Match | None = None, *, order_by: str | None = None, fields: Sequence[str] | None = None
    ) -> Iterator[Record]:
        """Iterate over every matching point."""
        pages = self._pages(match, fields)
        yield from pages if order_by is None else sorted_by(pages, order_by)

    def _pages(self, match: Match | None, fields: Sequence[str] | None) -> Iterator[Record]:
        offset: Any = None
        flt, payload = edge_filter(match), edge_selector(fields)
        while True:
            request = qe.ScrollRequest(offset=offset, limit=_PAGE, filter=flt, with_payload=payload)
            with self._using() as shard:
                page, offset = shard.scroll(request)
            yield from (Record(id=str(r.id), payload=dict(r.payload or {})) for r in page)
            if offset is None:
                return

    def latest(self, match: Match, *, order_by: str, limit: int) -> list[Record]:
        """The ``limit`` matching points with the highest ``order_by``, highest first."""
        order = qe.OrderBy(order_by, qe.Direction.Desc)
        request = qe.ScrollRequest(limit=limit, filter=edge_filter(match), with_payload=True, order_by=order)
        with self._using() as shard:
            page, _ = shard.scroll(request)
        return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in page]

    def count(self, match: Match | None = None) -> int:
        """Count matching points exactly."""
        with self._using() as shard:
            return int(shard.count(qe.CountRequest(exact=True, filter=edge_filter(match))))

    def search(
        self,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        match: Match | None = None,
        limit: int = 10,
        fields: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Nearest points by the dense vector, or else by the sparse one."""
        return self.searches([Search(dense=dense, sparse=sparse, match=match, limit=limit, fields=fields)])[0]

    def searches(self, requests: Sequence[Search]) -> list[list[Hit]]:
        """Several searches in one engine call, their hits in the order of ``requests``."""
        asked = {i: _query(r) for i, r in enumerate(requests) if r.dense is not None or (r.sparse and r.sparse.indices)}
        found: dict[int, list[Hit]] = {}
        if asked:
            with self._using() as shard:
                results = shard.query_batch(qe.QueryBatchRequest(list(asked.values())))
            found = {i: [edge_hit(p) for p in points] for i, points in zip(asked, results, strict=True)}
        return [found.get(i, []) for i in range(len(requests))]

    def close(self) -> None:
        with self._lock:
            if self._shard is not None:
                self._shard.close()
            self._shard = None


def _query(search: Search) -> qe.QueryRequest:
    """The engine's request for a dense or (non-empty) sparse search."""
    flt, payload = edge_filter(search.match), edge_selector(search.fields)
    if search.dense is not None:
        query = qe.Query.Nearest(list(search.dense), using=DENSE)
    elif search.sparse is not None:
        query = qe.Query.Nearest(edge_sparse(search.sparse), using=SPARSE)
    else:
        raise ValueError("a search needs a dense or a sparse vector")
    vectors = search.vectors
    return qe.QueryRequest(limit=search.limit, query=query, filter=flt, with_payload=payload, with_vector=vectors)
