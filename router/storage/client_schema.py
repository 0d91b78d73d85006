"""``qdrant-client``'s side of the storage protocol: creating a collection, and converting filters, points and hits.

A router collection is created with its vectors, payload indexes and cluster layout; the
conversions map the protocol's types to the client's models and back.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from router.storage.base import DENSE, SPARSE, CollectionSpec, Hit, Match, PointData, Record, SparseVector, dense_of
from router.storage.cluster import ClusterOptions

# A collection another process just created may answer errors for a moment while its shards start.
_SETTLE_SECONDS = 10.0


def create_collection(client: QdrantClient, name: str, spec: CollectionSpec, cluster: ClusterOptions) -> None:
    """Create the collection of ``spec``; one that another process creates meanwhile is taken as is."""
    size = spec.dense_size
    dense = {DENSE: models.VectorParams(size=size, distance=models.Distance.COSINE)} if size is not None else {}
    modifier = models.Modifier.IDF if spec.sparse_idf else None
    sparse = {SPARSE: models.SparseVectorParams(modifier=modifier)} if spec.sparse else None
    try:
        client.create_collection(
            name, vectors_config=dense, sparse_vectors_config=sparse, **cluster.creation(sharded=spec.sharded)
        )
    except UnexpectedResponse as exc:
        # API replicas and the sync worker start together: another one created it first.
        if exc.status_code != 409:
            raise
        _settle(client, name)


def _settle(client: QdrantClient, name: str) -> None:
    deadline = time.monotonic() + _SETTLE_SECONDS
    while True:
        try:
            client.get_collection(name)
            return
        except UnexpectedResponse:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def ensure_indexes(client: QdrantClient, name: str, spec: CollectionSpec) -> None:
    """Create the payload indexes of ``spec`` that the collection lacks (the tenant field with ``is_tenant``)."""
    wanted: dict[str, models.PayloadSchemaParams | models.PayloadSchemaType] = dict.fromkeys(
        spec.keyword_fields, models.PayloadSchemaType.KEYWORD
    )
    wanted.update(dict.fromkeys(spec.integer_fields, models.PayloadSchemaType.INTEGER))
    if spec.tenant_field:
        wanted[spec.tenant_field] = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
    existing = client.get_collection(name).payload_schema
    with warnings.catch_warnings():
        # Local mode accepts but ignores payload indexes and says so once per process.
        warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
        for field, schema in wanted.items():
            if field not in existing:
                client.create_payload_index(name, field, schema, wait=True)


def to_filter(match: Match | None) -> models.Filter | None:
    """A filter requiring every field of ``match`` (a list value matches any of its items)."""
    if not match:
        return None
    conditions: list[models.Condition] = [
        models.FieldCondition(
            key=key,
            match=models.MatchValue(value=value)
            if isinstance(value, str | int | bool)
            else models.MatchAny(any=list(value)),
        )
        for key, value in match.items()
    ]
    return models.Filter(must=conditions)


def to_sparse(vector: SparseVector) -> models.SparseVector:
    """The client's sparse vector."""
    return models.SparseVector(indices=list(vector.indices), values=list(vector.values))


def to_struct(point: PointData) -> models.PointStruct:
    """The point as the client writes it; an empty sparse vector is left out."""
    vectors: dict[str, Any] = {}
    if point.dense is not None:
        vectors[DENSE] = [float(x) for x in point.dense]
    if point.sparse is not None and point.sparse.indices:
        vectors[SPARSE] = to_sparse(point.sparse)
    return models.PointStruct(id=point.id, vector=vectors, payload=dict(point.payload))


def to_hits(points: Sequence[models.ScoredPoint]) -> list[Hit]:
    """Search results as the protocol returns them."""
    return [Hit(str(p.id), float(p.score), dict(p.payload or {}), dense_of(p.vector)) for p in points]


def to_records(points: Sequence[models.Record]) -> list[Record]:
    """Stored points as the protocol returns them."""
    return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in points]
