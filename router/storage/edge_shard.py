"""A shard that can be swapped while in use, and the on-disk states a swap goes through.

Beside the shard directory ``<name>`` an index build leaves ``<name>.index-build`` (the copy
being indexed) and, during a swap, ``<name>.index-aside`` (the old shard). Each step of a swap
is one rename, so ``recover`` can turn whatever a crash leaves into a loadable store holding
every point: an aside shard whose live directory is gone is put back, an aside shard whose
replacement is in place is deleted, build copies are deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from time import monotonic, perf_counter
from typing import IO, Any

import qdrant_edge as qe

from router.storage.base import DENSE, SPARSE, CollectionSpec, StorageUnavailable

log = logging.getLogger(__name__)

BUILD = ".index-build"
ASIDE = ".index-aside"
# Qdrant Edge wants at least one vector: a payload-only collection gets an unused sparse one.
_PLACEHOLDER = "_none"


def shard_config(spec: CollectionSpec) -> qe.EdgeConfig:
    """The shard configuration of a collection."""
    vectors: dict[str, Any] = {}
    sparse: dict[str, Any] = {}
    if spec.dense_size is not None:
        vectors[DENSE] = qe.EdgeVectorParams(size=spec.dense_size, distance=qe.Distance.Cosine)
    if spec.sparse:
        sparse[SPARSE] = qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)
    if not vectors and not sparse:
        sparse[_PLACEHOLDER] = qe.EdgeSparseVectorParams()
    return qe.EdgeConfig(vectors=vectors, sparse_vectors=sparse)


def has_index(path: Path) -> bool:
    """Whether a shard directory holds a segment whose dense vectors are HNSW-indexed."""
    for config in (path / "segments").glob("*/segment.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
            vectors = json.loads(config.read_text())["config"]["vector_data"]
            if vectors.get(DENSE, {}).get("index", {}).get("type") == "hnsw":
                return True
    return False


def recover(root: Path) -> None:
    """Complete or roll back a swap cut short, and remove leftover build copies."""
    for aside in root.glob(f"*{ASIDE}"):
        live = root / aside.name.removesuffix(ASIDE)
        if (live / "segments").exists():
            shutil.rmtree(aside)  # the built shard was already in place
        else:
            shutil.rmtree(live, ignore_errors=True)
            aside.rename(live)
            log.warning("index swap rolled back", extra={"collection": live.name})
    for build in root.glob(f"*{BUILD}"):
        shutil.rmtree(build, ignore_errors=True)
    sync_dir(root)


class LiveShard:
    """An open shard that can be replaced while in use.

    Every call takes its lock, so no call runs on a shard being swapped out; writes also take
    the write guard, which a build holds while copying and swapping.
    """

    def __init__(self, path: Path, shard: qe.EdgeShard) -> None:
        self.path = path
        self._shard: qe.EdgeShard | None = shard
        self._lock = threading.Lock()
        self.guard = threading.Lock()
        self.writes = 0
        self.last_write = monotonic()
        self.indexed = has_index(path)
        # Points upserted since the index was built: they sit in a plain segment, searched exactly.
        self.fresh_points = 0
        self.notify: threading.Condition | None = None

    @contextlib.contextmanager
    def reading(self) -> Iterator[qe.EdgeShard]:
        """The shard, for one call."""
        with self._lock:
            if self._shard is None:
                raise StorageUnavailable(f"shard {self.path.name} is closed")
            yield self._shard

    @contextlib.contextmanager
    def writing(self, points: int = 0) -> Iterator[qe.EdgeShard]:
        """The shard, for one write of ``points`` upserted points."""
        with self.guard:
            try:
                with self.reading() as shard:
                    yield shard
            finally:
                self.writes += 1
                self.fresh_points += points
                self.last_write = monotonic()
        if self.notify is not None:
            with self.notify:
                self.notify.notify_all()

    def replace(self, built: Path) -> float:
        """Swap in an indexed copy of this shard (the caller holds the write guard).

        Returns:
            The seconds no call could use the shard.
        """
        aside = self.path.with_name(self.path.name + ASIDE)
        with self._lock:
            start = perf_counter()
            if self._shard is not None:
                self._shard.close()
            self._shard = None
            self.path.rename(aside)
            built.rename(self.path)
            sync_dir(self.path.parent)
            try:
                self._shard = qe.EdgeShard.load(str(self.path))
            except Exception:
                shutil.rmtree(self.path)
                aside.rename(self.path)
                self._shard = qe.EdgeShard.load(str(self.path))
                raise
            paused = perf_counter() - start
        shutil.rmtree(aside)
        sync_dir(self.path.parent)
        self.indexed = has_index(self.path)
        self.fresh_points = 0
        return paused

    def close(self) -> None:
        with self._lock:
            if self._shard is not None:
                self._shard.close()
            self._shard = None


def reset(path: Path) -> None:
    """Remove a half-created shard directory (a crash during creation) before creating it."""
    if path.exists():
        shutil.rmtree(path)


def lock_directory(root: Path) -> IO[str]:
    """Hold the data directory for this process, or say which process holds it."""
    handle = (root / ".lock").open("a+")
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


def sync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename or a new file in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_tree(path: Path) -> None:
    """Flush every file under ``path`` (and the directory) to disk."""
    for file in path.rglob("*"):
        if file.is_file():
            fd = os.open(file, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    sync_dir(path)
