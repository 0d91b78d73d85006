"""HNSW indexes of large embedded collections, built out of process and swapped in.

Qdrant Edge keeps the points of a shard in plain segments and never indexes on its own, so
dense search is exact and its cost grows with the collection. ``EdgeShard.optimize()`` builds
the HNSW graph but holds the GIL for the whole build (a minute or more at 100k points), so it
never runs in the serving process. Instead, once a collection holds more than ``threshold``
points and writes have been quiet for a while, the indexer copies the shard (under its write
guard, so the copy is consistent), builds the copy's index in a low-priority child process
(``python -m router.storage.edge_index``) and swaps the result in, provided nothing was written
meanwhile; otherwise it tries again after the next quiet period. Until the swap the live shard
keeps serving exact search: a search never waits for a build.

The copy, the swap and what a crash can leave on disk are described in ``edge_shard``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from time import monotonic, perf_counter

import qdrant_edge as qe

from router import heap
from router.storage.base import INDEX_THRESHOLD, CollectionSpec
from router.storage.edge_shard import BUILD, LiveShard, shard_config, sync_tree

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HnswParams:
    """How the graph is built; Qdrant's defaults (full-scan threshold in KB of vectors)."""

    m: int = 16
    ef_construct: int = 100
    full_scan_threshold_kb: int = 10_000

    def config(self) -> qe.HnswIndexConfig:
        return qe.HnswIndexConfig(
            m=self.m, ef_construct=self.ef_construct, full_scan_threshold=self.full_scan_threshold_kb
        )


@dataclass(frozen=True)
class IndexPolicy:
    """When and how embedded collections are indexed.

    Attributes:
        threshold: points above which a collection is indexed; an indexed one is rebuilt once
            more than this many points were upserted after its build.
        quiet: seconds without writes before a build starts (a sync writes in bursts).
        hnsw: how graphs are built.
        priority: niceness of the build process (routes keep the CPU).
    """

    threshold: int = INDEX_THRESHOLD
    quiet: float = 5.0
    hnsw: HnswParams = HnswParams()
    priority: int = 19


DEFAULT_INDEX = IndexPolicy()


@dataclass
class _Watched:
    spec: CollectionSpec
    live: LiveShard
    # ``live.writes`` when last found needing nothing (or when a build failed): not due until it changes.
    checked: int | None = None


class EdgeIndexer:
    """Builds HNSW indexes of the watched collections, one at a time, in a background thread.

    Args:
        root: the data directory holding the shard directories.
        policy: when and how to build.
    """

    def __init__(self, root: Path, policy: IndexPolicy) -> None:
        self._root = root
        self.policy = policy
        self._watched: dict[str, _Watched] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._building: str | None = None
        self._child: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self.builds = 0  # child processes started

    def watch(self, spec: CollectionSpec, live: LiveShard) -> None:
        """Index this collection whenever it needs it."""
        if spec.dense_size is None:
            return
        with self._cond:
            self._watched[spec.name] = _Watched(spec, live)
            live.notify = self._cond
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="edge-indexer", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def forget(self, name: str) -> None:
        """Stop watching a collection, ending its build (if one runs) first."""
        with self._cond:
            watched = self._watched.pop(name, None)
            if watched is not None:
                watched.live.notify = None
            if self._building == name and self._child is not None:
                self._child.terminate()
            while self._building == name:
                self._cond.wait()

    def close(self) -> None:
        """End any build (its copy is removed) and stop the thread."""
        with self._cond:
            self._stopped = True
            if self._child is not None:
                self._child.terminate()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                watched = self._next()
                if self._stopped:
                    return
                if watched is None:
                    continue
                self._building = watched.spec.name
            try:
                self._consider(watched)
            except Exception:
                log.exception("index build failed", extra={"collection": watched.spec.name})
                watched.checked = watched.live.writes
            finally:
                with self._cond:
                    self._building = None
                    self._cond.notify_all()

    def _next(self) -> _Watched | None:
        """A collection due for a check, after waiting (called holding the condition)."""
        wait: float | None = None
        for watched in self._watched.values():
            if watched.checked == watched.live.writes:
                continue
            left = self.policy.quiet - (monotonic() - watched.live.last_write)
            if left <= 0:
                return watched
            wait = left if wait is None else min(wait, left)
        if not self._stopped:
            self._cond.wait(wait)
        return None

    def _consider(self, watched: _Watched) -> None:
        live, name = watched.live, watched.spec.name
        writes = live.writes
        with live.reading() as shard:
            points = int(shard.count(qe.CountRequest(exact=True)))
        if points <= self.policy.threshold or (live.indexed and live.fresh_points <= self.policy.threshold):
            watched.checked = writes
            return
        build = self._root / f"{name}{BUILD}"
        start = perf_counter()
        try:
            with live.guard:
                writes = live.writes
                with live.reading() as shard:
                    shard.flush()
                shutil.rmtree(build, ignore_errors=True)
                shutil.copytree(live.path, build)
            copied = round((perf_counter() - start) * 1000)
            log.info("index build started", extra={"collection": name, "points": points, "copy_ms": copied})
            built = self._child_build(build, watched.spec)
            if built is None:
                watched.checked = writes
                return
            with live.guard:
                if live.writes != writes or self._gone(name):
                    log.info(
                        "index build discarded: written meanwhile",
                        extra={"collection": name, "seconds": round(perf_counter() - start, 1)},
                    )
                    return
                paused = live.replace(build)
            watched.checked = writes
            seconds = round(perf_counter() - start, 1)
            log.info(
                "index built",
                extra={"collection": name, "seconds": seconds, "swap_ms": round(paused * 1000), **built},
            )
            # The old shard's in-memory structures were freed with it, and the C allocator keeps their
            # pages: without a trim a 100k-point swap left about 120 MB of them resident, unused.
            heap.release()
        finally:
            shutil.rmtree(build, ignore_errors=True)

    def _gone(self, name: str) -> bool:
        with self._cond:
            return self._stopped or name not in self._watched

    def _child_build(self, build: Path, spec: CollectionSpec) -> dict[str, int] | None:
        """Run the build process on the copy; its figures, or None when it failed or was stopped."""
        with self._cond:
            if self._stopped or spec.name not in self._watched:
                return None
            self._child = child = subprocess.Popen(  # noqa: S603
                build_command(build, spec, self.policy.hnsw, priority=self.policy.priority),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            self.builds += 1
        try:
            out, err = child.communicate()
        finally:
            with self._cond:
                self._child = None
        if child.returncode != 0:
            if not self._gone(spec.name):
                log.error("index build process failed", extra={"collection": spec.name, "stderr": err[-2000:]})
            return None
        figures: dict[str, int] = json.loads(out.strip().splitlines()[-1])
        return figures


def build_command(path: Path, spec: CollectionSpec, hnsw: HnswParams, *, priority: int = 19) -> list[str]:
    """The command that indexes the shard copy at ``path`` (see ``main``)."""
    command = [sys.executable, "-m", "router.storage.edge_index", str(path), "--dense", str(spec.dense_size)]
    if spec.sparse:
        command.append("--sparse")
    return [
        *command,
        *("--m", str(hnsw.m), "--ef-construct", str(hnsw.ef_construct)),
        *("--full-scan-threshold", str(hnsw.full_scan_threshold_kb)),
        *("--nice", str(priority), "--parent", str(os.getpid())),
    ]


def build_index(path: Path, spec: CollectionSpec, hnsw: HnswParams) -> dict[str, int]:
    """Index a closed shard directory in this process (blocking, GIL held); its point counts."""
    base = shard_config(spec)
    config = qe.EdgeConfig(
        vectors=base.vectors,
        sparse_vectors=base.sparse_vectors,
        hnsw_config=hnsw.config(),
        # In KB: any segment gets indexed, whatever its size (the caller decided it is worth it).
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=1),
    )
    shard = qe.EdgeShard.load(str(path), config)
    try:
        shard.optimize()
        shard.flush()
        info = shard.info()
        figures = {"points": int(info.points_count), "segments": int(info.segments_count)}
    finally:
        shard.close()
    sync_tree(path)
    return figures


def _die_with_parent(parent: int) -> None:
    """Linux: end this process when the thread that started it ends (a killed service leaves no builder)."""
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


def main(argv: Sequence[str] | None = None) -> int:
    """Index the shard copy named on the command line; print its point counts as JSON."""
    parser = argparse.ArgumentParser(prog="python -m router.storage.edge_index", description=main.__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--dense", type=int, required=True, help="dense vector size")
    parser.add_argument("--sparse", action="store_true", help="the shard has sparse vectors")
    parser.add_argument("--m", type=int, default=HnswParams.m)
    parser.add_argument("--ef-construct", type=int, default=HnswParams.ef_construct)
    parser.add_argument("--full-scan-threshold", type=int, default=HnswParams.full_scan_threshold_kb)
    parser.add_argument("--nice", type=int, default=19)
    parser.add_argument("--parent", type=int, default=None, help="exit when this process ends")
    args = parser.parse_args(argv)
    if args.parent is not None:
        _die_with_parent(args.parent)
    os.nice(args.nice)
    spec = CollectionSpec(name=args.path.name, dense_size=args.dense, sparse=args.sparse)
    hnsw = HnswParams(args.m, args.ef_construct, args.full_scan_threshold)
    start = perf_counter()
    figures = build_index(args.path, spec, hnsw)
    print(json.dumps({**figures, "build_ms": round((perf_counter() - start) * 1000)}))  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
