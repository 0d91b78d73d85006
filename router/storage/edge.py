"""Qdrant Edge adapter: Qdrant's engine in-process, one shard directory per collection.

Qdrant Edge allows a single writer per directory, so the whole data directory is
locked for the lifetime of an ``EdgeStorage``: a second process gets a clear error
instead of a corrupted shard. The lock is an ``flock``, which the kernel releases when
its process dies, so a crashed owner never leaves it stale.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import IO

import qdrant_edge as qe

from router.storage.base import HNSW_EF, INDEX_THRESHOLD, CollectionSpec
from router.storage.edge_collection import EdgeCollection
from router.storage.edge_exact import load
from router.storage.edge_index import DEFAULT_INDEX, EdgeIndexer, IndexPolicy
from router.storage.edge_query import edge_indexes
from router.storage.edge_shard import LiveShard, lock_directory, recover, reset, shard_config

__all__ = ["EdgeCollection", "EdgeStorage"]


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

    def flush(self) -> None:
        """Flush every open shard to disk."""
        with self._guard:
            for collection in self._open.values():
                collection.flush()

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
