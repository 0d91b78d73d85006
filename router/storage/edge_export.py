"""Read a whole embedded data directory: each collection's spec, and its points with their vectors.

``router migrate`` moves an embedded deployment to a Qdrant server with it. The directory is
locked while it is open, exactly as by a router process, so nothing writes to it meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from router.storage.base import DENSE, SPARSE, CollectionSpec, PointData, SparseVector, StorageUnavailable
from router.storage.edge import EdgeStorage

_CONFIG = "edge_config.json"


@dataclass
class StoredCollection:
    """One collection of the data directory, open for reading."""

    spec: CollectionSpec
    count: int
    shard: qe.EdgeShard

    def points(self, *, batch: int = 256) -> Iterator[list[PointData]]:
        """Every point with its payload and vectors, ``batch`` at a time."""
        offset: Any = None
        while True:
            page, offset = self.shard.scroll(
                qe.ScrollRequest(offset=offset, limit=batch, with_payload=True, with_vector=True)
            )
            if page:
                yield [_point(record) for record in page]
            if offset is None:
                return


def _point(record: Any) -> PointData:
    vectors: dict[str, Any] = record.vector or {}
    dense = vectors.get(DENSE)
    sparse = vectors.get(SPARSE)
    return PointData(
        id=str(record.id),
        payload=dict(record.payload or {}),
        dense=[float(x) for x in dense] if dense is not None else None,
        sparse=SparseVector(list(sparse.indices), list(sparse.values)) if sparse is not None else None,
    )


def _spec(name: str, path: Path, shard: qe.EdgeShard) -> CollectionSpec:
    try:
        config = json.loads((path / _CONFIG).read_text())
    except (OSError, ValueError) as exc:
        raise StorageUnavailable(f"cannot read the vector configuration of {path}: {exc}") from exc
    dense = config.get("vectors", {}).get(DENSE)
    tenant: str | None = None
    keywords: list[str] = []
    integers: list[str] = []
    for field, index in sorted(shard.info().payload_schema.items()):
        if index.data_type == qe.PayloadSchemaType.Integer:
            integers.append(field)
        elif index.data_type == qe.PayloadSchemaType.Keyword and getattr(index.params, "is_tenant", None):
            tenant = field
        elif index.data_type == qe.PayloadSchemaType.Keyword:
            keywords.append(field)
    sparse = config.get("sparse_vectors", {}).get(SPARSE)
    return CollectionSpec(
        name=name,
        dense_size=int(dense["size"]) if dense else None,
        sparse=sparse is not None,
        # A store of a previous version weighs its words by the engine's IDF: the copy must too.
        sparse_idf=isinstance(sparse, dict) and str(sparse.get("modifier", "")).lower() == "idf",
        tenant_field=tenant,
        keyword_fields=tuple(keywords),
        integer_fields=tuple(integers),
    )


def collection_names(path: Path) -> list[str]:
    """The collections of a data directory, sorted (none when it is not one)."""
    if not path.is_dir():
        return []
    return sorted(p.name for p in path.iterdir() if (p / "segments").is_dir())


class EdgeExport:
    """An embedded data directory opened to be copied elsewhere.

    Args:
        path: the data directory; it must exist and no router process may be using it.

    Raises:
        FileNotFoundError: the directory does not exist.
        StorageUnavailable: another process holds the directory.
    """

    def __init__(self, path: Path) -> None:
        if not path.is_dir():
            raise FileNotFoundError(f"data directory {path} does not exist")
        self._root = path
        # Held only for its lock: shards are opened one at a time below.
        self._lock: EdgeStorage | None = EdgeStorage(path)

    def names(self) -> list[str]:
        """The collections of the directory, sorted."""
        return collection_names(self._root)

    @contextmanager
    def open(self, name: str) -> Iterator[StoredCollection]:
        """Open one collection for reading; it is closed on leaving the block."""
        path = self._root / name
        shard = qe.EdgeShard.load(str(path))
        try:
            count = int(shard.count(qe.CountRequest(exact=True)))
            yield StoredCollection(_spec(name, path, shard), count, shard)
        finally:
            shard.close()

    def close(self) -> None:
        """Release the directory."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None
