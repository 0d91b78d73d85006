"""Qdrant Edge adapter: Qdrant's engine in-process, one shard directory per collection.

Qdrant Edge allows a single writer per directory, so the whole data directory is
locked for the lifetime of an ``EdgeStorage``: a second process gets a clear error
instead of a corrupted shard. The lock is an ``flock``, which the kernel releases when
its process dies, so a crashed owner never leaves it stale.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

from router.storage.base import (
    DENSE,
    HNSW_EF,
    SPARSE,
    CollectionSpec,
    Fusion,
    Hit,
    Match,
    PointData,
    Record,
    Search,
    SparseVector,
)
from router.storage.edge_index import DEFAULT_INDEX, EdgeIndexer, IndexPolicy
from router.storage.edge_shard import LiveShard, lock_directory, recover, reset, shard_config

_PAGE = 2048
# Edge needs at least one vector in a shard's config; payload-only collections get this one.


def _filter(match: Match | None) -> qe.Filter | None:
    if not match:
        return None
    conditions: list[Any] = []
    for key, value in match.items():
        if isinstance(value, str | int | bool):
            conditions.append(qe.FieldCondition(key=key, match=qe.MatchValue(value)))
        else:
            conditions.append(qe.FieldCondition(key=key, match=qe.MatchAny(list(value))))
    return qe.Filter(must=conditions)


def _vectors(point: PointData) -> dict[str, Any]:
    vectors: dict[str, Any] = {}
    if point.dense is not None:
        vectors[DENSE] = [float(x) for x in point.dense]
    if point.sparse is not None and point.sparse.indices:
        vectors[SPARSE] = qe.SparseVector(indices=point.sparse.indices, values=point.sparse.values)
    return vectors


def _sparse(vector: SparseVector) -> qe.SparseVector:
    return qe.SparseVector(indices=vector.indices, values=vector.values)


class EdgeCollection:
    """A collection stored as one Qdrant Edge shard; dense searches use ``hnsw_ef`` on indexed segments."""

    def __init__(self, spec: CollectionSpec, live: LiveShard, *, hnsw_ef: int) -> None:
        self._spec = spec
        self._live = live
        self._params = qe.SearchParams(hnsw_ef=hnsw_ef)

    @property
    def spec(self) -> CollectionSpec:
        return self._spec

    @property
    def indexed(self) -> bool:
        """Whether an HNSW index (built in the background) serves part of its dense searches."""
        return self._live.indexed

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points by id."""
        if not points:
            return
        batch = [qe.Point(id=p.id, vector=_vectors(p), payload=dict(p.payload)) for p in points]
        with self._live.writing(len(batch)) as shard:
            shard.update(qe.UpdateOperation.upsert_points(batch))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if ids:
            with self._live.writing() as shard:
                shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def delete_where(self, match: Match) -> None:
        """Delete every point whose payload matches."""
        flt = _filter(match)
        if flt is None:
            raise ValueError("delete_where needs a non-empty match")
        with self._live.writing() as shard:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))

    def retrieve(self, ids: Sequence[str], *, fields: Sequence[str] | None = None) -> list[Record]:
        """Return the points that exist among ``ids``."""
        if not ids:
            return []
        with self._live.reading() as shard:
            found = shard.retrieve(list(ids), _selector(fields), False)
        return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in found]

    def scroll(
        self, match: Match | None = None, *, order_by: str | None = None, fields: Sequence[str] | None = None
    ) -> Iterator[Record]:
        """Iterate over every matching point."""
        records: list[Record] = []
        offset: Any = None
        payload = _selector(fields)
        flt = _filter(match)
        while True:
            request = qe.ScrollRequest(offset=offset, limit=_PAGE, filter=flt, with_payload=payload)
            with self._live.reading() as shard:
                page, offset = shard.scroll(request)
            batch = [Record(id=str(r.id), payload=dict(r.payload or {})) for r in page]
            if order_by is None:
                yield from batch
            else:
                records.extend(batch)
            if offset is None:
                break
        if order_by is not None:
            yield from sorted(records, key=lambda r: (order_by not in r.payload, r.payload.get(order_by, 0)))

    def latest(self, match: Match, *, order_by: str, limit: int) -> list[Record]:
        """The ``limit`` matching points with the highest ``order_by``, highest first."""
        order = qe.OrderBy(order_by, qe.Direction.Desc)
        request = qe.ScrollRequest(limit=limit, filter=_filter(match), with_payload=True, order_by=order)
        with self._live.reading() as shard:
            page, _ = shard.scroll(request)
        return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in page]

    def count(self, match: Match | None = None) -> int:
        """Count matching points exactly."""
        with self._live.reading() as shard:
            return int(shard.count(qe.CountRequest(exact=True, filter=_filter(match))))

    def search(
        self,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        match: Match | None = None,
        limit: int = 10,
        fusion: Fusion = "rrf",
        prefetch_limit: int = 50,
        fields: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Nearest points by the dense vector, the sparse one, or both fused."""
        flt, payload = _filter(match), _selector(fields)
        has_sparse = sparse is not None and bool(sparse.indices)
        if dense is not None and sparse is not None and has_sparse:
            request = qe.QueryRequest(
                limit=limit,
                prefetches=[
                    qe.Prefetch(
                        limit=prefetch_limit, query=qe.Query.Nearest(list(dense), using=DENSE), params=self._params
                    ),
                    qe.Prefetch(limit=prefetch_limit, query=qe.Query.Nearest(_sparse(sparse), using=SPARSE)),
                ],
                query=_fusion(fusion),
                filter=flt,
                with_payload=payload,
            )
        elif dense is not None:
            request = self._dense(dense, flt, limit, payload)
        elif sparse is not None and has_sparse:
            request = qe.QueryRequest(
                limit=limit, query=qe.Query.Nearest(_sparse(sparse), using=SPARSE), filter=flt, with_payload=payload
            )
        else:
            return []
        with self._live.reading() as shard:
            return [_hit(p) for p in shard.query(request)]

    def searches(self, requests: Sequence[Search]) -> list[list[Hit]]:
        """Several searches in one engine call, their hits in the order of ``requests``."""
        queries = {i: q for i, r in enumerate(requests) if (q := self._query(r)) is not None}
        if not queries:
            return [[] for _ in requests]
        with self._live.reading() as shard:
            results = shard.query_batch(qe.QueryBatchRequest(list(queries.values())))
        found = dict(zip(queries, results, strict=True))
        return [[_hit(p) for p in found.get(i, [])] for i in range(len(requests))]

    def _query(self, search: Search) -> qe.QueryRequest | None:
        flt, payload = _filter(search.match), _selector(search.fields)
        if search.dense is not None:
            return self._dense(search.dense, flt, search.limit, payload)
        if search.sparse is None or not search.sparse.indices:
            return None
        query = qe.Query.Nearest(_sparse(search.sparse), using=SPARSE)
        return qe.QueryRequest(limit=search.limit, query=query, filter=flt, with_payload=payload)

    def _dense(
        self, vector: Sequence[float], flt: qe.Filter | None, limit: int, payload: Any = True
    ) -> qe.QueryRequest:
        query = qe.Query.Nearest(list(vector), using=DENSE)
        return qe.QueryRequest(limit=limit, query=query, filter=flt, with_payload=payload, params=self._params)

    def close(self) -> None:
        self._live.close()


def _fusion(kind: Fusion) -> Any:
    # The stubs leave fusions out of QueryRequest.query; the engine accepts them there.
    return qe.Fusion.Rrf(k=60) if kind == "rrf" else qe.Fusion.Dbsf()


def _selector(fields: Sequence[str] | None) -> Any:
    return True if fields is None else qe.PayloadSelector.Include(list(fields))


def _hit(point: Any) -> Hit:
    return Hit(id=str(point.id), score=float(point.score), payload=dict(point.payload or {}))


class EdgeStorage:
    """Collections kept as Qdrant Edge shards under one data directory.

    Args:
        path: the data directory.
        hnsw_ef: dense search breadth on HNSW-indexed segments.
        index: when large collections get an HNSW index built in the background; None never.
    """

    def __init__(self, path: Path, *, hnsw_ef: int = HNSW_EF, index: IndexPolicy | None = DEFAULT_INDEX) -> None:
        self._root = Path(path)
        self._root.mkdir(parents=True, exist_ok=True)
        self._lock_file: IO[str] | None = lock_directory(self._root)
        recover(self._root)
        self._open: dict[str, EdgeCollection] = {}
        self._guard = threading.Lock()
        self._hnsw_ef = hnsw_ef
        self.indexer = None if index is None else EdgeIndexer(self._root, index)

    @property
    def location(self) -> str:
        return str(self._root)

    def collection(self, spec: CollectionSpec) -> EdgeCollection:
        """Open the collection's shard, creating it when missing."""
        with self._guard:
            existing = self._open.get(spec.name)
            if existing is not None:
                return existing
            path = self._root / spec.name
            if (path / "segments").exists():
                shard = qe.EdgeShard.load(str(path))
            else:
                reset(path)
                shard = qe.EdgeShard.create(str(path), shard_config(spec))
            indexed = shard.info().payload_schema
            for name, params in _indexes(spec).items():
                if name not in indexed:
                    shard.update(qe.UpdateOperation.create_field_index(name, params))
            live = LiveShard(path, shard)
            collection = EdgeCollection(spec, live, hnsw_ef=self._hnsw_ef)
            self._open[spec.name] = collection
            if self.indexer is not None:
                self.indexer.watch(spec, live)
            return collection

    def exists(self, name: str) -> bool:
        """Whether a shard of that name exists."""
        return name in self._open or (self._root / name / "segments").exists()

    def drop(self, name: str) -> None:
        """Close and delete a shard directory."""
        with self._guard:
            if self.indexer is not None:
                self.indexer.forget(name)
            opened = self._open.pop(name, None)
            if opened is not None:
                opened.close()
            shutil.rmtree(self._root / name, ignore_errors=True)

    def close(self) -> None:
        """End any index build, close every shard and release the directory lock."""
        if self.indexer is not None:
            self.indexer.close()
        with self._guard:
            for collection in self._open.values():
                collection.close()
            self._open.clear()
            if self._lock_file is not None:
                # An empty lock file tells the next owner that this one closed cleanly.
                self._lock_file.seek(0)
                self._lock_file.truncate()
                self._lock_file.close()
                self._lock_file = None


def _indexes(spec: CollectionSpec) -> dict[str, Any]:
    indexes: dict[str, Any] = {}
    if spec.tenant_field:
        indexes[spec.tenant_field] = qe.KeywordIndexParams(is_tenant=True)
    for name in spec.keyword_fields:
        indexes[name] = qe.KeywordIndexParams()
    for name in spec.integer_fields:
        indexes[name] = qe.IntegerIndexParams()
    return indexes
