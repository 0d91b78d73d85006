"""Qdrant Edge's forms of the storage protocol's filters, vectors, payload selectors and hits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe

from router.storage.base import DENSE, SPARSE, CollectionSpec, Fusion, Hit, Match, PointData, SparseVector


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


def edge_fusion(kind: Fusion) -> Any:
    """A fusion of prefetched results."""
    # The stubs leave fusions out of QueryRequest.query; the engine accepts them there.
    return qe.Fusion.Rrf(k=60) if kind == "rrf" else qe.Fusion.Dbsf()


def edge_selector(fields: Sequence[str] | None) -> Any:
    """The payload a result carries: ``fields`` only, or all of it when None."""
    return True if fields is None else qe.PayloadSelector.Include(list(fields))


def edge_hit(point: Any) -> Hit:
    """A scored point as a hit."""
    return Hit(id=str(point.id), score=float(point.score), payload=dict(point.payload or {}))


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
