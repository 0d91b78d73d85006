"""Qdrant server adapter through ``qdrant-client`` (also its in-memory local mode, for tests).

Collections are named ``prefix + spec.name`` so several routers can share one server. Every
write waits until it is applied; sharding, replication and consistency follow
:class:`~router.storage.cluster.ClusterOptions`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import httpx
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from router.storage.base import (
    DENSE,
    HNSW_EF,
    SPARSE,
    CollectionSpec,
    Hit,
    Match,
    PointData,
    Record,
    Search,
    SparseVector,
    StorageUnavailable,
    sorted_by,
)
from router.storage.client_schema import (
    create_collection,
    ensure_indexes,
    to_filter,
    to_hits,
    to_records,
    to_sparse,
    to_struct,
)
from router.storage.cluster import ClusterOptions

_PAGE = 1024
_UNREACHABLE = (ResponseHandlingException, httpx.TransportError, ConnectionError)


@contextmanager
def _reachable(location: str) -> Iterator[None]:
    try:
        yield
    except _UNREACHABLE as exc:
        raise StorageUnavailable(f"cannot reach Qdrant at {location}: {exc}") from exc
    except UnexpectedResponse as exc:
        # 5xx: the server (or too few replicas of a shard) cannot serve now; callers may retry.
        if exc.status_code is not None and exc.status_code >= 500:
            detail = exc.content.decode(errors="replace")[:300]
            raise StorageUnavailable(f"Qdrant at {location} answered {exc.status_code}: {detail}") from exc
        raise


class ClientCollection:
    """A collection on a Qdrant server (or in ``qdrant-client``'s local mode)."""

    def __init__(
        self,
        client: QdrantClient,
        name: str,
        spec: CollectionSpec,
        where: str,
        cluster: ClusterOptions,
        params: models.SearchParams | None = None,
    ) -> None:
        self._client = client
        self._name = name
        self._spec = spec
        self._where = where
        self._writes = cluster.writes()
        self._reads = cluster.reads()
        self._params = params

    @property
    def spec(self) -> CollectionSpec:
        """The spec the collection was opened with."""
        return self._spec

    def upsert(self, points: Sequence[PointData]) -> None:
        """Insert or replace points by id; applied (on enough replicas) when it returns."""
        if not points:
            return
        with _reachable(self._where):
            self._client.upsert(self._name, points=[to_struct(p) for p in points], **self._writes)

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points by id; unknown ids are ignored."""
        if not ids:
            return
        with _reachable(self._where):
            self._client.delete(self._name, models.PointIdsList(points=list(ids)), **self._writes)

    def delete_where(self, match: Match) -> None:
        """Delete every point whose payload matches; an empty match is refused."""
        flt = to_filter(match)
        if flt is None:
            raise ValueError("delete_where needs a non-empty match")
        with _reachable(self._where):
            self._client.delete(self._name, models.FilterSelector(filter=flt), **self._writes)

    def retrieve(self, ids: Sequence[str], *, fields: Sequence[str] | None = None) -> list[Record]:
        """Return the points that exist among ``ids`` (any order)."""
        if not ids:
            return []
        payload: bool | list[str] = True if fields is None else list(fields)
        with _reachable(self._where):
            return to_records(self._client.retrieve(self._name, list(ids), with_payload=payload, **self._reads))

    def scroll(
        self, match: Match | None = None, *, order_by: str | None = None, fields: Sequence[str] | None = None
    ) -> Iterator[Record]:
        """Iterate over every matching point, ordered by an integer field when given.

        With ``order_by`` all matching points are fetched first; those lacking the field come last.
        ``fields`` limits the payload returned to those keys.
        """
        # Qdrant's own order_by disables offset paging, so sort client-side instead.
        pages = self._pages(match, fields)
        yield from pages if order_by is None else sorted_by(pages, order_by)

    def _pages(self, match: Match | None, fields: Sequence[str] | None = None) -> Iterator[Record]:
        flt = to_filter(match)
        payload: bool | list[str] = True if fields is None else list(fields)
        offset: models.ExtendedPointId | None = None
        while True:
            with _reachable(self._where):
                page, offset = self._client.scroll(
                    self._name, flt, limit=_PAGE, offset=offset, with_payload=payload, **self._reads
                )
            yield from to_records(page)
            if offset is None:
                return

    def latest(self, match: Match, *, order_by: str, limit: int) -> list[Record]:
        """The ``limit`` matching points with the highest ``order_by``, highest first."""
        order = models.OrderBy(key=order_by, direction=models.Direction.DESC)
        with _reachable(self._where):
            page, _ = self._client.scroll(self._name, to_filter(match), limit=limit, order_by=order, **self._reads)
        return to_records(page)

    def count(self, match: Match | None = None) -> int:
        """Count matching points exactly."""
        with _reachable(self._where):
            return self._client.count(self._name, to_filter(match), exact=True).count

    def search(
        self,
        *,
        dense: Sequence[float] | None = None,
        sparse: SparseVector | None = None,
        match: Match | None = None,
        limit: int = 10,
        fields: Sequence[str] | None = None,
    ) -> list[Hit]:
        """Nearest points by the dense vector, or else by the sparse one (an empty one finds nothing)."""
        return self.searches([Search(dense=dense, sparse=sparse, match=match, limit=limit, fields=fields)])[0]

    def searches(self, requests: Sequence[Search]) -> list[list[Hit]]:
        """Several searches in one request to the server, their hits in the order of ``requests``."""
        queries = {i: q for i, r in enumerate(requests) if (q := self._query(r)) is not None}
        if not queries:
            return [[] for _ in requests]
        with _reachable(self._where):
            results = self._client.query_batch_points(self._name, list(queries.values()), **self._reads)
        found = dict(zip(queries, results, strict=True))
        return [to_hits(found[i].points) if i in found else [] for i in range(len(requests))]

    def _query(self, search: Search) -> models.QueryRequest | None:
        flt = to_filter(search.match)
        payload: bool | list[str] = True if search.fields is None else list(search.fields)
        if search.dense is not None:
            dense = [*map(float, search.dense)]
            return models.QueryRequest(
                query=dense,
                using=DENSE,
                filter=flt,
                limit=search.limit,
                with_payload=payload,
                with_vector=[DENSE] if search.vectors else False,
                params=self._params,
            )
        if search.sparse is None or not search.sparse.indices:
            return None
        return models.QueryRequest(
            query=to_sparse(search.sparse),
            using=SPARSE,
            filter=flt,
            limit=search.limit,
            with_payload=payload,
            with_vector=[DENSE] if search.vectors else False,
        )


class ClientStorage:
    """Collections on a Qdrant server, reached through ``qdrant-client``.

    Args:
        client: the client to use; closed by :meth:`close`.
        prefix: prepended to every collection name on the server.
        location: how to name the server in messages; derived from the client when None.
        cluster: sharding, replication and consistency of the collections.
        hnsw_ef: dense search breadth on the server's HNSW-indexed segments.
    """

    def __init__(
        self,
        client: QdrantClient,
        *,
        prefix: str = "router_",
        location: str | None = None,
        cluster: ClusterOptions | None = None,
        hnsw_ef: int = HNSW_EF,
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._cluster = cluster or ClusterOptions()
        options = client.init_options
        self._where = location or str(options.get("url") or options.get("location") or options.get("host") or "qdrant")
        # Local mode searches exactly and warns about search parameters: it gets none.
        local = options.get("location") == ":memory:" or options.get("path") is not None
        self._params = None if local else models.SearchParams(hnsw_ef=hnsw_ef)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        prefix: str = "router_",
        timeout: float = 10.0,
        cluster: ClusterOptions | None = None,
        hnsw_ef: int = HNSW_EF,
    ) -> ClientStorage:
        """Connect to a Qdrant server; nothing is sent until a collection is used."""
        # The client's version check runs in a background thread and only warns, which
        # races with (and under -W error breaks) callers; connection errors surface on use.
        client = QdrantClient(url=url, api_key=api_key, timeout=math.ceil(timeout), check_compatibility=False)
        return cls(client, prefix=prefix, location=url, cluster=cluster, hnsw_ef=hnsw_ef)

    @classmethod
    def in_memory(cls, prefix: str = "router_") -> ClientStorage:
        """An ephemeral in-process store (``qdrant-client`` local mode), for tests."""
        return cls(QdrantClient(":memory:"), prefix=prefix, location=":memory:")

    @property
    def location(self) -> str:
        """The server URL (or ``:memory:``)."""
        return self._where

    @property
    def client(self) -> QdrantClient:
        """The underlying client."""
        return self._client

    @property
    def cluster(self) -> ClusterOptions:
        """Sharding, replication and consistency of the collections."""
        return self._cluster

    def collection(self, spec: CollectionSpec) -> ClientCollection:
        """Open the collection, creating it (and any missing payload index) when needed."""
        name = self._prefix + spec.name
        with _reachable(self._where):
            if not self._client.collection_exists(name):
                create_collection(self._client, name, spec, self._cluster)
            ensure_indexes(self._client, name, spec)
        return ClientCollection(self._client, name, spec, self._where, self._cluster, self._params)

    def exists(self, name: str) -> bool:
        """Whether a collection of that name exists."""
        with _reachable(self._where):
            return self._client.collection_exists(self._prefix + name)

    def drop(self, name: str) -> None:
        """Remove a collection and all its points; a missing one is ignored."""
        with _reachable(self._where):
            if self._client.collection_exists(self._prefix + name):
                self._client.delete_collection(self._prefix + name)

    def close(self) -> None:
        """Release the client (an in-memory store is discarded)."""
        self._client.close()
