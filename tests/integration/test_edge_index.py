"""Embedded HNSW indexes: built out of process on a copy, swapped in, and crash-safe on disk.

Real Qdrant Edge shards and real build processes, on small collections (a threshold of 1,000
points) of random vectors. A build can be held at a gate (a file the build process waits for) so
that writes, closes and drops land while it runs, deterministically.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from router import heap
from router.settings import StorageSettings
from router.storage import edge_index
from router.storage.base import CollectionSpec, PointData, StorageUnavailable
from router.storage.edge import EdgeCollection, EdgeStorage
from router.storage.edge_index import HnswParams, IndexPolicy
from router.storage.edge_shard import ASIDE, BUILD

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DIM = 32
SPEC = CollectionSpec(name="vectors", dense_size=DIM, sparse=False, tenant_field="namespace", keyword_fields=("kind",))
# A tiny full-scan threshold makes even small filtered searches walk the graph.
POLICY = IndexPolicy(threshold=1000, quiet=0.2, hnsw=HnswParams(full_scan_threshold_kb=1))
# Only a failure guard: a build of a few thousand points takes seconds.
DEADLINE = 120.0
# The build process, held until the gate file exists (it ends with its parent while held, too).
GATE_SCRIPT = (
    "import os, pathlib, sys, time\n"
    "from router.storage import edge_index\n"
    "gate, args = pathlib.Path(sys.argv[1]), sys.argv[2:]\n"
    "edge_index._die_with_parent(int(args[args.index('--parent') + 1]))\n"
    "with open(gate.with_suffix('.pids'), 'a') as f: f.write(f'{os.getpid()}\\n')\n"
    "while not gate.exists(): time.sleep(0.02)\n"
    "raise SystemExit(edge_index.main(args))\n"
)


def pid(n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"vector-{n}"))


def points(start: int, stop: int, *, seed: int = 0, kind: str = "original") -> list[PointData]:
    """Points ``start..stop``: most in namespace ``big``, every tenth in ``small``."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(stop - start, DIM))
    return [
        PointData(
            id=pid(n),
            payload={"namespace": "small" if n % 10 == 0 else "big", "n": n, "kind": kind},
            dense=[float(x) for x in vectors[n - start]],
        )
        for n in range(start, stop)
    ]


QUERIES = [[float(x) for x in v] for v in np.random.default_rng(99).normal(size=(20, DIM))]


def results(collection: EdgeCollection) -> list[list[str]]:
    """Top-10 ids of every query, in each namespace."""
    return [
        [h.id for h in collection.search(dense=q, match={"namespace": ns}, limit=10)]
        for ns in ("big", "small")
        for q in QUERIES
    ]


def exact(vectors: dict[str, tuple[list[float], str]]) -> list[list[str]]:
    """What ``results`` must be: brute force over the points known to be stored."""
    ids = list(vectors)
    matrix = np.array([vectors[i][0] for i in ids])
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    answer = []
    for ns in ("big", "small"):
        mask = np.array([vectors[i][1] == ns for i in ids])
        for q in QUERIES:
            scores = matrix @ (np.array(q) / np.linalg.norm(q))
            scores[~mask] = -np.inf
            answer.append([ids[i] for i in np.argsort(-scores)[:10]])
    return answer


def stored(batch: list[PointData]) -> dict[str, tuple[list[float], str]]:
    return {p.id: (list(p.dense or []), str(p.payload["namespace"])) for p in batch}


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def gate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Build processes wait for this file to exist; their pids are appended to ``gate.pids``."""
    gate = tmp_path / "gate"
    real = edge_index.build_command

    def gated(path: Path, spec: CollectionSpec, hnsw: HnswParams, *, priority: int = 19) -> list[str]:
        return [sys.executable, "-c", GATE_SCRIPT, str(gate), *real(path, spec, hnsw, priority=priority)[3:]]

    monkeypatch.setattr(edge_index, "build_command", gated)
    yield gate
    gate.touch()


def started(gate: Path) -> list[int]:
    pids = gate.with_suffix(".pids")
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def alive(process: int) -> bool:
    """Whether a process runs (a zombie left to a parent that does not reap it counts as ended)."""
    try:
        stat = Path(f"/proc/{process}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.endswith((BUILD, ASIDE)))


def test_index_is_built_in_the_background_and_serves_exact_results(tmp_path: Path) -> None:
    storage = EdgeStorage(tmp_path / "data", index=POLICY)
    try:
        collection = storage.collection(SPEC)
        batch = points(0, 2500)
        collection.upsert(batch)
        truth = exact(stored(batch))
        assert results(collection) == truth

        searched_during_build = 0
        while not collection.indexed:
            assert results(collection) == truth
            searched_during_build += 1
        assert searched_during_build > 0

        assert storage.indexer is not None
        assert storage.indexer.builds == 1
        assert results(collection) == truth
        assert collection.count() == 2500
        assert collection.retrieve([pid(7)])[0].payload == {"namespace": "big", "n": 7, "kind": "original"}
        assert leftovers(tmp_path / "data") == []
    finally:
        storage.close()

    reopened = EdgeStorage(tmp_path / "data", index=POLICY)
    try:
        again = reopened.collection(SPEC)
        assert again.indexed
        assert again.count() == 2500
        assert results(again) == truth
    finally:
        reopened.close()


def test_the_heap_is_trimmed_once_the_built_index_is_swapped_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The shard swapped out frees its structures to the C allocator, which keeps the pages unless trimmed.
    storage = EdgeStorage(tmp_path / "data", index=POLICY)
    collection = storage.collection(SPEC)
    trims: list[bool] = []
    real = heap.release

    def release() -> bool:
        trims.append(collection.indexed)
        return real()

    monkeypatch.setattr(heap, "release", release)
    try:
        collection.upsert(points(0, 2500))
        wait_for(lambda: bool(trims), "a trim after the swap")
        assert trims == [True]  # after the swap, once
        assert storage.indexer is not None
        assert storage.indexer.builds == 1
    finally:
        storage.close()


def test_small_collections_are_not_indexed(tmp_path: Path) -> None:
    storage = EdgeStorage(tmp_path / "data", index=POLICY)
    try:
        collection = storage.collection(SPEC)
        collection.upsert(points(0, 900))
        time.sleep(POLICY.quiet * 5)  # past the quiet period the check ran and found nothing to do
        assert storage.indexer is not None
        assert storage.indexer.builds == 0
        assert not collection.indexed
    finally:
        storage.close()


def test_writes_during_a_build_discard_it_and_a_later_build_keeps_them(
    tmp_path: Path, gate: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="router.storage.edge_index")
    storage = EdgeStorage(tmp_path / "data", index=POLICY)
    try:
        collection = storage.collection(SPEC)
        first = points(0, 2000)
        collection.upsert(first)
        wait_for(lambda: len(started(gate)) == 1, "the first build")

        added = points(2000, 2100, seed=1)
        changed = [PointData(p.id, {**p.payload, "kind": "changed"}, p.dense) for p in first[:50]]
        collection.upsert(added)
        collection.upsert(changed)
        collection.delete([pid(n) for n in range(100, 120)])
        time.sleep(POLICY.quiet * 5)  # quiet again, and the build still held: no second process
        assert len(started(gate)) == 1
        gate.touch()

        wait_for(lambda: collection.indexed, "the index")
        assert len(started(gate)) == 2
        assert any(r.getMessage() == "index build discarded: written meanwhile" for r in caplog.records)
        assert collection.count() == 2100 - 20
        assert collection.retrieve([pid(3)])[0].payload["kind"] == "changed"
        assert collection.retrieve([pid(2050)])[0].payload["n"] == 2050
        assert collection.retrieve([pid(n) for n in range(100, 120)]) == []
        vectors = stored(first + added)
        for n in range(100, 120):
            del vectors[pid(n)]
        assert results(collection) == exact(vectors)
        built = [r for r in caplog.records if r.getMessage() == "index built"]
        assert len(built) == 1
        assert vars(built[0])["points"] == 2080
    finally:
        storage.close()
    assert leftovers(tmp_path / "data") == []


def test_close_during_a_build_ends_it_and_leaves_nothing_behind(tmp_path: Path, gate: Path) -> None:
    storage = EdgeStorage(tmp_path / "data", index=POLICY)
    collection = storage.collection(SPEC)
    collection.upsert(points(0, 1500))
    wait_for(lambda: len(started(gate)) == 1 and (tmp_path / "data" / f"vectors{BUILD}").exists(), "the build")

    storage.close()

    assert not alive(started(gate)[0])
    assert leftovers(tmp_path / "data") == []
    with pytest.raises(StorageUnavailable):
        collection.count()
    reopened = EdgeStorage(tmp_path / "data", index=None)
    try:
        assert reopened.collection(SPEC).count() == 1500
    finally:
        reopened.close()


def test_drop_during_a_build_ends_it(tmp_path: Path, gate: Path) -> None:
    storage = EdgeStorage(tmp_path / "data", index=POLICY)
    try:
        storage.collection(SPEC).upsert(points(0, 1500))
        wait_for(lambda: len(started(gate)) == 1, "the build")

        storage.drop(SPEC.name)

        assert not alive(started(gate)[0])
        assert not storage.exists(SPEC.name)
        assert leftovers(tmp_path / "data") == []
    finally:
        storage.close()


KILLED_SERVICE = """
import sys, time
from pathlib import Path
from router.storage import edge_index
from router.storage.edge import EdgeStorage
from tests.integration import test_edge_index as t

gate, data = Path(sys.argv[1]), Path(sys.argv[2])
real = edge_index.build_command
edge_index.build_command = lambda path, spec, hnsw, *, priority=19: [
    sys.executable, "-c", t.GATE_SCRIPT, str(gate), *real(path, spec, hnsw, priority=priority)[3:]
]
EdgeStorage(data, index=t.POLICY).collection(t.SPEC).upsert(t.points(0, 1500))
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the build process ends with its parent on Linux")
def test_a_service_killed_during_a_build_takes_the_build_with_it(tmp_path: Path) -> None:
    gate, data = tmp_path / "gate", tmp_path / "data"
    service = subprocess.Popen([sys.executable, "-c", KILLED_SERVICE, str(gate), str(data)], cwd=ROOT)
    try:
        wait_for(lambda: len(started(gate)) == 1 and (data / f"vectors{BUILD}").exists(), "the build")
    finally:
        service.kill()
        service.wait()
    wait_for(lambda: not alive(started(gate)[0]), "the build process to end")
    assert leftovers(data) == [f"vectors{BUILD}"]

    storage = EdgeStorage(data, index=None)
    try:
        assert storage.collection(SPEC).count() == 1500
        assert leftovers(data) == []
    finally:
        storage.close()


@pytest.fixture
def stored_shard(tmp_path: Path) -> Path:
    """A data directory holding the ``vectors`` collection (1,200 points), closed."""
    root = tmp_path / "data"
    storage = EdgeStorage(root, index=None)
    storage.collection(SPEC).upsert(points(0, 1200))
    storage.close()
    return root


def assert_intact(root: Path) -> None:
    storage = EdgeStorage(root, index=None)
    try:
        collection = storage.collection(SPEC)
        assert collection.count() == 1200
        assert collection.retrieve([pid(11)])[0].payload == {"namespace": "big", "n": 11, "kind": "original"}
        assert leftovers(root) == []
    finally:
        storage.close()


def test_recovery_removes_a_build_copy_left_by_a_crash(stored_shard: Path) -> None:
    shutil.copytree(stored_shard / "vectors", stored_shard / f"vectors{BUILD}")
    shutil.rmtree(stored_shard / f"vectors{BUILD}" / "segments")  # cut short while copying
    assert_intact(stored_shard)


def test_recovery_rolls_back_a_swap_cut_after_the_live_shard_was_moved_aside(stored_shard: Path) -> None:
    shutil.copytree(stored_shard / "vectors", stored_shard / f"vectors{BUILD}")
    (stored_shard / "vectors").rename(stored_shard / f"vectors{ASIDE}")
    assert_intact(stored_shard)


def test_recovery_completes_a_swap_cut_after_the_built_shard_was_moved_in(stored_shard: Path) -> None:
    shutil.copytree(stored_shard / "vectors", stored_shard / f"vectors{ASIDE}")
    assert_intact(stored_shard)


def test_recovery_completes_a_swap_cut_while_deleting_the_old_shard(stored_shard: Path) -> None:
    shutil.copytree(stored_shard / "vectors", stored_shard / f"vectors{ASIDE}")
    shutil.rmtree(stored_shard / f"vectors{ASIDE}" / "segments")
    assert_intact(stored_shard)


def test_storage_settings_reach_the_embedded_adapter(tmp_path: Path) -> None:
    from router.runtime import open_storage

    off = open_storage(StorageSettings(data=tmp_path / "off", index=False))
    assert isinstance(off, EdgeStorage)
    assert off.indexer is None
    off.close()
    on = open_storage(StorageSettings(data=tmp_path / "on", index_threshold=5, hnsw_ef=64))
    assert isinstance(on, EdgeStorage)
    assert on.indexer is not None
    assert on.indexer.policy.threshold == 5
    on.close()
