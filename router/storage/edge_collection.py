"""One collection as a Qdrant Edge shard: writes, reads and searches through the storage protocol."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import qdrant_edge as qe

from router.storage.base import (
    DENSE,
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
from router.storage.edge_exact import ExactTier, stored_dense
from router.storage.edge_query import edge_filter, edge_fusion, edge_hit, edge_selector, edge_sparse, edge_vectors
from router.storage.edge_shard import LiveShard
from router.storage.edge_tenant import WholeTenant

_PAGE = 2048


class EdgeCollection:
    """A collection stored as one Qdrant Edge shard; dense searches use ``hnsw_ef`` on indexed segments.

    With ``exact`` (a collection not indexed yet, see ``router.storage.edge_exact``) the dense
    and word searches it can answer are answered from memory; every write goes to it too.
    """

    def __init__(self, spec: CollectionSpec, live: LiveShard, *, hnsw_ef: int, exact: ExactTier | None = None) -> None:
        self._spec = spec
        self._live = live
        self._params = qe.SearchParams(hnsw_ef=hnsw_ef)
        self._exact = exact
        self._tenants = WholeTenant(spec.tenant_field, live, self.count)

    @property
    def spec(self) -> CollectionSpec:
        return self._spec

    @property
    def exact(self) -> bool:
        """Whether searches are answered from memory (``router.storage.edge_exact``)."""
        return self._current() is not None

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
            if (exact := self._current()) is not None:
                kept = shard.retrieve([p.id for p in points], False, [DENSE])
                stored = {str(r.id): v for r in kept if (v := stored_dense(r.vector)) is not None}
                exact.upsert(points, stored)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id."""
        if ids:
            with self._live.writing() as shard:
                shard.update(qe.UpdateOperation.delete_points(list(ids)))
                if (exact := self._current()) is not None:
                    exact.delete(ids)

    def delete_where(self, match: Match) -> None:
        """Delete every point whose payload matches."""
        flt = edge_filter(match)
        if flt is None:
            raise ValueError("delete_where needs a non-empty match")
        with self._live.writing() as shard:
            shard.update(qe.UpdateOperation.delete_points_by_filter(flt))
            if (exact := self._current()) is not None and exact.answers(match, ()):
                exact.delete_where(match)
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
        if dense is None or sparse is None or not sparse.indices:
            return self.searches([Search(dense=dense, sparse=sparse, match=match, limit=limit, fields=fields)])[0]
        prefetches = [
            qe.Prefetch(limit=prefetch_limit, query=qe.Query.Nearest(list(dense), using=DENSE), params=self._params),
            qe.Prefetch(limit=prefetch_limit, query=qe.Query.Nearest(edge_sparse(sparse), using=SPARSE)),
        ]
        request = qe.QueryRequest(
            limit=limit,
            prefetches=prefetches,
            query=edge_fusion(fusion),
            filter=edge_filter(match),
            with_payload=edge_selector(fields),
        )
        with self._live.reading() as shard:
            return [edge_hit(p) for p in shard.query(request)]

    def searches(self, requests: Sequence[Search]) -> list[list[Hit]]:
        """Several searches in one engine call, their hits in the order of ``requests``.

        Searches the in-memory tier answers do not reach the engine. A search whose filter is its
        tenant alone, when that tenant holds every point, is asked without it (the engine's
        filtered HNSW search takes 1.6x as long); a hit of another tenant, written meanwhile,
        sends it again with the filter.
        """
        found: dict[int, list[Hit]] = {}
        queries: dict[int, qe.QueryRequest] = {}
        unfiltered: set[int] = set()
        for i, request in enumerate(requests):
            dense, sparse, fields = request.dense, request.sparse, request.fields or ()
            if dense is None and (sparse is None or not sparse.indices):
                continue  # nothing to search by: no hits
            exact = self._tier(request.match, request.fields, sparse=dense is None)
            if exact is not None and dense is not None:
                found[i] = exact.search(dense, request.match, request.limit, fields)
            elif exact is not None and sparse is not None:
                found[i] = exact.search_words(sparse, request.match, request.limit, fields)
            elif self._tenants.whole(request.match):
                unfiltered.add(i)
                queries[i] = self._query(request, self._tenants.checked(request))
            else:
                queries[i] = self._query(request)
        if queries:
            with self._live.reading() as shard:
                results = shard.query_batch(qe.QueryBatchRequest(list(queries.values())))
            for i, points in zip(queries, results, strict=True):
                hits = [edge_hit(p) for p in points]
                kept = self._tenants.kept(requests[i], hits) if i in unfiltered else hits
                if kept is None:
                    with self._live.reading() as shard:
                        kept = [edge_hit(p) for p in shard.query(self._query(requests[i]))]
                found[i] = kept
        return [found.get(i, []) for i in range(len(requests))]

    def _tier(self, match: Match | None, fields: Sequence[str] | None, *, sparse: bool = False) -> ExactTier | None:
        """The in-memory tier, when it answers a dense (or ``sparse``) search with this filter and these fields."""
        exact = self._current()
        return exact if exact is not None and exact.answers(match, fields, sparse=sparse) else None

    def _current(self) -> ExactTier | None:
        """The in-memory tier while it still holds the collection (dropped once full or indexed)."""
        exact = self._exact
        if exact is not None and (exact.full or self._live.indexed):
            self._exact = exact = None  # the engine (and its index) serves it from now on
        return exact

    def _query(self, search: Search, unfiltered: Search | None = None) -> qe.QueryRequest:
        """The engine's request for a dense or (non-empty) sparse search; ``unfiltered`` asks it without its filter."""
        asked = unfiltered or search
        flt, payload = edge_filter(asked.match), edge_selector(asked.fields)
        if search.dense is not None:
            query = qe.Query.Nearest(list(search.dense), using=DENSE)
            return qe.QueryRequest(
                limit=search.limit, query=query, filter=flt, with_payload=payload, params=self._params
            )
        if search.sparse is None:
            raise ValueError("a search needs a dense or a sparse vector")
        query = qe.Query.Nearest(edge_sparse(search.sparse), using=SPARSE)
        return qe.QueryRequest(limit=search.limit, query=query, filter=flt, with_payload=payload)

    def flush(self) -> None:
        """Write the shard's segments to disk, so that what it answered survives a power loss."""
        with self._live.reading() as shard:
            shard.flush()

    def close(self) -> None:
        self._live.close()
