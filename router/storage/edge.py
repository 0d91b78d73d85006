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
    INDEX_THRESHOLD,
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
from router.storage.edge_exact import ExactTier, load
from router.storage.edge_index import DEFAULT_INDEX, EdgeIndexer, IndexPolicy
from router.storage.edge_query import (
    edge_filter,
    edge_fusion,
    edge_hit,
    edge_indexes,
    edge_selector,
    edge_sparse,
    edge_vectors,
)
from router.storage.edge_shard import LiveShard, lock_directory, recover, reset, shard_config

_PAGE = 2048


class EdgeCollection:
    """A collection stored as one Qdrant Edge shard; dense searches use ``hnsw_ef`` on indexed segments.

    With ``exact`` (a collection not indexed yet, see ``router.storage.edge_exact``) the dense
    searches it can answer are answered from memory; every write goes to it too.
    """

    def __init__(self, spec: CollectionSpec, live: LiveShard, *, hnsw_ef: int, exact: ExactTier | None = None) -> None:
        self._spec = spec
        self._live = live
        self._params = qe.SearchParams(hnsw_ef=hnsw_ef)
        self._exact = exact

    @property
    def spec(self) -> CollectionSpec:
        return self._spec

    @property
    def exact(self) -> bool:
        """Whether dense searches are answered from memory (``router.storage.edge_exact``)."""
        return self._exact is not None and not self._exact.full and not self._live.indexed

    @property
    def indexed(self) -> bool:
        """Whether an HNSW index (built in the background) serves part of its dense searches."""
        return self._live.indexed

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points by id."""
        if not points:
            return
        batch = [qe.Point(id=p.id, vector=edge_vectors(p), payload=dict(p.payload)) for p in points]
        with self._live.writing(len(batch)) as shard:
            shard.update(qe.UpdateOperation.upsert_points(batch))
            if self._exact is not None:
                self._exact.upsert(points)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if ids:
            with self._live.writing() as shard:
                shard.update(qe.UpdateOperation.delete_points(list(ids)))
                if self._exact is not None:
                    self._exact.delete(ids)

    def delete_where(self, match: Match) -> None:
        """Delete every point whose payload matches."""
        flt = edge_filter(match)
        if flt is None:
            raise ValueError("delete_where needs a non-empty match")
        with self._live.writing() as shard:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            if self._exact is not None and self._exact.answers(match, ()):
                self._exact.delete_where(match)
            else:
                self._exact = None  # it cannot tell which points the filter took

    def retrieve(self, ids: Sequence[str], *, fields: Sequence[str] | None = None) -> list[Record]:
        """Return the points that exist among ``ids``."""
        if not ids:
            return []
        with self._live.reading() as shard:
            found = shard.retrieve(list(ids), edge_selector(fields), False)
        return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in found]

    def scroll(
        self, match: Match | None = None, *, order_by: str | None = None, fields: Sequence[str] | None = None
    ) -> Iterator[Record]:
        """Iterate over every matching point."""
        records: list[Record] = []
        offset: Any = None
        payload = edge_selector(fields)
        flt = edge_filter(match)
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
        request = qe.ScrollRequest(limit=limit, filter=edge_filter(match), with_payload=True, order_by=order)
        with self._live.reading() as shard:
            page, _ = shard.scroll(request)
        return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in page]

    def count(self, match: Match | None = None) -> int:
        """Count matching points exactly."""
        with self._live.reading() as shard:
            return int(shard.count(qe.CountRequest(exact=True, filter=edge_filter(match))))

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
        has_sparse = sparse is not None and bool(sparse.indices)
        if dense is not None and not has_sparse and (exact := self._tier(match, fields)) is not None:
            return exact.search(dense, match, limit, fields or ())
        flt, payload = edge_filter(match), edge_selector(fields)
        if dense is not None and sparse is not None and has_sparse:
            request = qe.QueryRequest(
                limit=limit,
                prefetches=[
                    qe.Prefetch(
                        limit=prefetch_limit, query=qe.Query.Nearest(list(dense), using=DENSE), params=self._params
                    ),
                    qe.Prefetch(limit=prefetch_limit, query=qe.Query.Nearest(edge_sparse(sparse), using=SPARSE)),
                ],
                query=edge_fusion(fusion),
                filter=flt,
                with_payload=payload,
            )
        elif dense is not None:
            request = self._dense(dense, flt, limit, payload)
        elif sparse is not None and has_sparse:
            request = qe.QueryRequest(
                limit=limit, query=qe.Query.Nearest(edge_sparse(sparse), using=SPARSE), filter=flt, with_payload=payload
            )
        else:
            return []
        with self._live.reading() as shard:
            return [edge_hit(p) for p in shard.query(request)]

    def searches(self, requests: Sequence[Search]) -> list[list[Hit]]:
        """Several searches in one engine call, their hits in the order of ``requests``.

        Dense searches the in-memory tier answers do not reach the engine.
        """
        found: dict[int, list[Hit]] = {}
        queries: dict[int, qe.QueryRequest] = {}
        for i, request in enumerate(requests):
            exact = None if request.dense is None else self._tier(request.match, request.fields)
            if exact is not None and request.dense is not None:
                found[i] = exact.search(request.dense, request.match, request.limit, request.fields or ())
            elif (query := self._query(request)) is not None:
                queries[i] = query
        if queries:
            with self._live.reading() as shard:
                results = shard.query_batch(qe.QueryBatchRequest(list(queries.values())))
            found.update((i, [edge_hit(p) for p in points]) for i, points in zip(queries, results, strict=True))
        return [found.get(i, []) for i in range(len(requests))]

    def _tier(self, match: Match | None, fields: Sequence[str] | None) -> ExactTier | None:
        """The in-memory tier, when it answers a dense search with this filter and these fields."""
        exact = self._exact
        if exact is None:
            return None
        if exact.full or self._live.indexed:
            self._exact = None  # the engine's index serves it from now on
            return None
        return exact if exact.answers(match, fields) else None

    def _query(self, search: Search) -> qe.QueryRequest | None:
        flt, payload = edge_filter(search.match), edge_selector(search.fields)
        if search.dense is not None:
            return self._dense(search.dense, flt, search.limit, payload)
        if search.sparse is None or not search.sparse.indices:
            return None
        query = qe.Query.Nearest(edge_sparse(search.sparse), using=SPARSE)
        return qe.QueryRequest(limit=search.limit, query=query, filter=flt, with_payload=payload)

    def _dense(
        self, vector: Sequence[float], flt: qe.Filter | None, limit: int, payload: Any = True
    ) -> qe.QueryRequest:
        query = qe.Query.Nearest(list(vector), using=DENSE)
        return qe.QueryRequest(limit=limit, query=query, filter=flt, with_payload=payload, params=self._params)

    def close(self) -> None:
        self._live.close()


class EdgeStorage:
    """Collections kept as Qdrant Edge shards under one data directory.

    Args:
        path: the data directory.
        hnsw_ef: dense search breadth on HNSW-indexed segments.
        index: when large collections get an HNSW index built in the background; None never.
        exact: whether collections below the index threshold answer dense searches from memory
            (those whose spec names ``resident_fields``).
    """

    def __init__(
        self, path: Path, *, hnsw_ef: int = HNSW_EF, index: IndexPolicy | None = DEFAULT_INDEX, exact: bool = True
    ) -> None:
        self._root = Path(path)
        self._root.mkdir(parents=True, exist_ok=True)
        self._lock_file: IO[str] | None = lock_directory(self._root)
        recover(self._root)
        self._open: dict[str, EdgeCollection] = {}
        self._guard = threading.Lock()
        self._hnsw_ef = hnsw_ef
        self.indexer = None if index is None else EdgeIndexer(self._root, index)
        self._exact_capacity = (index.threshold if index is not None else INDEX_THRESHOLD) if exact else 0

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
            for name, params in edge_indexes(spec).items():
                if name not in indexed:
                    shard.update(qe.UpdateOperation.create_field_index(name, params))
            live = LiveShard(path, shard)
            exact = load(spec, live, capacity=self._exact_capacity) if self._exact_capacity else None
            collection = EdgeCollection(spec, live, hnsw_ef=self._hnsw_ef, exact=exact)
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
