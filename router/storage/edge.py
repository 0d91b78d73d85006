"""Qdrant Edge adapter: Qdrant's engine in-process, one shard directory per collection.

Qdrant Edge allows a single writer per directory, so the whole data directory is
locked for the lifetime of an ``EdgeStorage``: a second process gets a clear error
instead of a corrupted shard. The lock is an ``flock``, which the kernel releases when
its process dies, so a crashed owner never leaves it stale.

Edge keeps a shard's points in plain segments and searches them exactly: embedded mode
serves catalogs of up to ``ROUTER_LIMIT_FUNCTIONS`` (10,000) functions, where an exact
search takes about a millisecond beside a query encode of ten.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

from router.storage.base import DENSE, SPARSE, CollectionSpec, StorageUnavailable
from router.storage.edge_collection import EdgeCollection, edge_indexes

__all__ = ["EdgeCollection", "EdgeStorage", "shard_config"]

log = logging.getLogger(__name__)
# Qdrant Edge wants at least one vector: a payload-only collection gets an unused sparse one.
_PLACEHOLDER = "_none"


class EdgeStorage:
    """Collections kept as Qdrant Edge shards under one data directory.

    Args:
        path: the data directory.
    """

    def __init__(self, path: Path) -> None:
        self._root = Path(path)
        _check_directory(self._root)
        self._root.mkdir(parents=True, exist_ok=True)
        self._lock_file: IO[str] | None = _lock_directory(self._root)
        self._open: dict[str, EdgeCollection] = {}
        self._guard = threading.Lock()

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
                shutil.rmtree(path, ignore_errors=True)  # half created by a crash
                shard = qe.EdgeShard.create(str(path), shard_config(spec))
            indexed = shard.info().payload_schema
            for name, params in edge_indexes(spec).items():
                if name not in indexed:
                    shard.update(qe.UpdateOperation.create_field_index(name, params))
            return self._open.setdefault(spec.name, EdgeCollection(spec, shard))

    def exists(self, name: str) -> bool:
        """Whether a shard of that name exists."""
        return name in self._open or (self._root / name / "segments").exists()

    def drop(self, name: str) -> None:
        """Close and delete a shard directory."""
        with self._guard:
            opened = self._open.pop(name, None)
            if opened is not None:
                opened.close()
            shutil.rmtree(self._root / name, ignore_errors=True)

    def close(self) -> None:
        """Close every shard and release the directory lock."""
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


def shard_config(spec: CollectionSpec) -> qe.EdgeConfig:
    """The shard configuration of a collection."""
    vectors: dict[str, Any] = {}
    sparse: dict[str, Any] = {}
    if spec.dense_size is not None:
        vectors[DENSE] = qe.EdgeVectorParams(size=spec.dense_size, distance=qe.Distance.Cosine)
    if spec.sparse:
        sparse[SPARSE] = qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if spec.sparse_idf else None)
    if not vectors and not sparse:
        sparse[_PLACEHOLDER] = qe.EdgeSparseVectorParams()
    return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)


def check_free(root: Path) -> None:
    """Raise ``StorageUnavailable`` naming the process that holds the data directory, if one does.

    A command checks this before it starts serving, so that the reason is its one line of output.
    """
    _check_directory(root)
    if (root / ".lock").exists():
        _lock_directory(root, hold=False)


def _check_directory(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise StorageUnavailable(f"data directory {root} is a file, not a directory")


def _lock_directory(root: Path, *, hold: bool = True) -> IO[str]:
    """Hold the data directory for this process, or say which process holds it."""
    try:
        handle = (root / ".lock").open("a+")
    except OSError as exc:  # read-only, or not ours: said in one line, as a held directory is
        raise StorageUnavailable(f"data directory {root} cannot be written: {exc.strerror or exc}") from exc
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        handle.seek(0)
        owner = handle.read().strip() or "another process"
        handle.close()
        raise StorageUnavailable(
            f"data directory {root} is in use by {owner}; embedded storage allows one process "
            "per directory (use a Qdrant server URL to share storage between processes)"
        ) from exc
    if not hold:
        handle.close()  # closing the file releases the lock
        return handle
    handle.seek(0)
    previous = handle.read().strip()
    if previous:
        log.warning(
            "data directory was not closed cleanly; taking it over",
            extra={"path": str(root), "previous_owner": previous},
        )
    handle.seek(0)
    handle.truncate()
    handle.write(f"pid {os.getpid()}")
    handle.flush()
    return handle
