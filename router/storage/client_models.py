"""Conversions between the storage protocol's types and ``qdrant-client``'s models."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qdrant_client import models

from router.storage.base import DENSE, SPARSE, Hit, Match, PointData, Record, SparseVector


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
    return [Hit(id=str(p.id), score=float(p.score), payload=dict(p.payload or {})) for p in points]


def to_records(points: Sequence[models.Record]) -> list[Record]:
    """Stored points as the protocol returns them."""
    return [Record(id=str(r.id), payload=dict(r.payload or {})) for r in points]
