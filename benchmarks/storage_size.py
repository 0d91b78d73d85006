"""Storage footprint: disk and memory per stored message, memory, usage example and function.

``python -m benchmarks.storage_size [--messages 1000000] [--points 100000] [--functions-store DIR]``

Writes agent runs (a user turn, a tool call, its result, an answer; ten runs per session)
through the router's own ``HistoryStore`` into an embedded store, and memories and usage
examples (random unit vectors: their size does not depend on their values) with the payloads
the router writes, then measures the allocated bytes of each collection's segments, its
write-ahead log and its payload index, and the process's resident memory. A Qdrant server
stores points in the same segment formats, so the segment figures carry over to it; the WAL
is per shard (and per replica) on a server. ``--functions-store`` also reports the collections
of a router's data directory (a catalog synced by ``router sync``, say).
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness import Header, progress, record
from router.embedding import DEFAULT_MODEL
from router.retrieval.examples import ExampleStore
from router.sessions.history import MESSAGES, HistoryStore
from router.sessions.records import memory_spec
from router.storage.base import Collection, PointData
from router.storage.edge import EdgeStorage
from router.storage.edge_export import EdgeExport

HEADING = "## Storage footprint (make bench-storage)"
MB = 1024 * 1024
WORDS = [
    *("flight", "hotel", "invoice", "order", "refund", "deploy", "service", "ticket", "calendar", "meeting"),
    *("report", "budget", "customer", "account", "password", "shipment", "warehouse", "payment", "contract"),
    *("schedule", "review", "release", "incident", "database", "backup", "dashboard", "metrics", "region"),
    *("cluster", "pipeline", "document", "summary", "travel", "booking", "weather"),
]
FUNCTIONS = ["search_flights", "book_hotel", "create_invoice", "deploy_service", "query_logs", "send_email"]


def disk_bytes(root: Path) -> int:
    """Bytes allocated on disk: Qdrant preallocates sparse files (~300 MB apparent for a small store)."""
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def run(rng: random.Random, number: int) -> list[dict[str, Any]]:
    """One agent run: the user's turn, a tool call, its result and the answer, each with an id."""
    call = f"call_{number}"
    arguments = {"query": sentence(rng, 4), "limit": rng.randint(1, 20)}
    result = {"items": [{"id": rng.randint(1, 10**6), "title": sentence(rng, 5)} for _ in range(3)]}
    messages = [
        {"role": "user", "content": sentence(rng, rng.randint(8, 20))},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": rng.choice(FUNCTIONS), "arguments": json.dumps(arguments)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": json.dumps(result)},
        {"role": "assistant", "content": sentence(rng, rng.randint(15, 40))},
    ]
    return [{**m, "id": str(uuid.UUID(int=rng.getrandbits(128)))} for m in messages]


def rss() -> int:
    """Resident memory of this process, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


@dataclass(frozen=True)
class Footprint:
    """One collection measured after the store was closed (everything flushed)."""

    what: str
    points: int
    segments: int
    wal: int
    payload_index: int
    payload_json: int = 0
    rss_open: int = 0
    rss_read: int = 0


def measure(root: Path, name: str, what: str, points: int, **extra: int) -> Footprint:
    folder = root / name
    parts = list((folder / "segments").iterdir())
    segments = sum(disk_bytes(s) for s in parts)
    index = sum(disk_bytes(s / "payload_index") for s in parts if (s / "payload_index").exists())
    return Footprint(what, points, segments, disk_bytes(folder / "wal"), index, **extra)


def write_messages(root: Path, total: int, checkpoints: list[int], seed: int) -> Iterator[Footprint]:
    """Store ``total`` messages, yielding a footprint at each checkpoint (closed, reopened, read)."""
    rng = random.Random(seed)
    written = payload = runs = 0
    report = progress("messages", total, unit="msg")
    storage = EdgeStorage(root)
    history = HistoryStore.open(storage)
    while written < total:
        messages = run(rng, runs)
        session = f"session-{runs // 10}"
        stored = history.append(session, messages, user_id=f"user-{runs // 40}")
        payload += sum(len(json.dumps(record)) for record in stored)
        written += len(messages)
        runs += 1
        report(min(written, total), total)
        if checkpoints and written >= checkpoints[0]:
            checkpoints.pop(0)
            storage.close()
            base = rss()
            storage = EdgeStorage(root)
            history = HistoryStore.open(storage)
            opened = rss() - base
            for n in rng.sample(range(runs // 10), min(1000, runs // 10)):
                history.messages(f"session-{n}", limit=20)
            read = rss() - base
            yield measure(
                root, MESSAGES.name, "messages", written, payload_json=payload, rss_open=opened, rss_read=read
            )
    storage.close()


def write_points(
    root: Path,
    what: str,
    open_collection: Callable[[EdgeStorage], Collection],
    total: int,
    payload: Callable[[int], dict[str, Any]],
    seed: int,
) -> Footprint:
    """Store ``total`` points with random unit vectors and the payloads the router writes."""
    generator = np.random.default_rng(seed)
    storage = EdgeStorage(root)
    collection = open_collection(storage)
    dimension = collection.spec.dense_size or 0
    report = progress(what, total, unit="pt")
    size = 0
    for start in range(0, total, 1000):
        count = min(1000, total - start)
        vectors = generator.standard_normal((count, dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        points = [
            PointData(id=str(uuid.uuid4()), payload=payload(start + i), dense=vectors[i].tolist()) for i in range(count)
        ]
        size += sum(len(json.dumps(p.payload)) for p in points)
        collection.upsert(points)
        report(start + count, total)
    storage.close()
    return measure(root, collection.spec.name, what, total, payload_json=size)


_MEMORY_VECTOR = base64.b64encode(bytes(range(256)) * 6).decode("ascii")


def memory_payload(n: int) -> dict[str, Any]:
    return {
        "scope": f"user:user-{n // 5}",
        "namespace": "travel",
        "text": f"I prefer aisle seats and vegetarian meals on flight number {n}.",
        "session_id": f"session-{n // 3}",
        "created_at": time.time(),
        # Memories keep their vector in the payload too (384 float32, base64) for recall's scroll.
        "vector": _MEMORY_VECTOR,
    }


def example_payload(n: int) -> dict[str, Any]:
    return {
        "namespace": "ops",
        "name": FUNCTIONS[n % len(FUNCTIONS)],
        "text": f"give the crew a heads-up about the maintenance window number {n}",
        "hash": uuid.UUID(int=n).hex,
        "seq": n,
    }


def functions_store(data: Path) -> list[Footprint]:
    """Each collection of a router's data directory."""
    source = EdgeExport(data)
    try:
        counts = {}
        for name in source.names():
            with source.open(name) as stored:
                counts[name] = stored.count
    finally:
        source.close()
    return [measure(data, name, f"{name.split('-')[0]} ({data})", count) for name, count in counts.items()]


NOTES = (
    "Messages are agent runs of four (user turn, tool call, tool result, answer; ten runs per session, "
    "four sessions per user) stored through `HistoryStore.append`; memories and usage examples carry "
    '384-d vectors (1,536 bytes each) and the router\'s payloads. "segments" is what grows with the '
    "points (vectors, payloads, id tracker, payload index); the WAL is a fixed cost per shard (32 MB "
    "segments, preallocated). RSS is the growth of this process's resident memory after reopening the "
    "store, then after reading the last 20 messages of 1,000 sessions."
)


def per(value: int, points: int, unit: int) -> str:
    # A handful of points says nothing per point: what they occupy is the collection's fixed cost.
    return f"{value / points * unit / MB:,.0f} MB" if points >= 1000 else ""


def table(rows: list[Footprint]) -> str:
    lines = [
        "| collection | points | segments | per 1M points | of which payload index | WAL | payload JSON per point"
        " | RSS after open / after 1,000 reads |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        memory = f"+{r.rss_open / MB:,.0f} / +{r.rss_read / MB:,.0f} MB" if r.rss_read else ""
        json_size = f"{r.payload_json / r.points:,.0f} B" if r.payload_json else ""
        lines.append(
            f"| {r.what} | {r.points:,} | {r.segments / MB:,.1f} MB | {per(r.segments, r.points, 10**6)} "
            f"| {r.payload_index / MB:,.1f} MB | {r.wal / MB:,.0f} MB | {json_size} | {memory} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--points", type=int, default=100_000, help="memories and usage examples each")
    parser.add_argument("--functions-store", type=Path, help="also report the collections of this data directory")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    header = Header.begin("benchmarks.storage_size", argv)
    rows: list[Footprint] = []
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        checkpoints = sorted({args.messages // 10, args.messages})
        rows += list(write_messages(root / "messages", args.messages, checkpoints, args.seed))
        rows.append(write_points(root / "memories", "memories", _memories, args.points, memory_payload, 1))
        rows.append(write_points(root / "examples", "usage examples", _examples, args.points, example_payload, 2))
    if args.functions_store is not None:
        rows += functions_store(args.functions_store)
    body = "\n\n".join(["Embedded store (Qdrant Edge), allocated bytes after closing the store.", table(rows), NOTES])
    print(f"{header.finish().markdown(timed=False)}\n\n{body}")
    if not args.no_record:
        record(HEADING, body, header, timed=False)


def _memories(storage: EdgeStorage) -> Collection:
    return storage.collection(memory_spec(DEFAULT_MODEL, 384))


def _examples(storage: EdgeStorage) -> Collection:
    return ExampleStore.open(storage, model=DEFAULT_MODEL, dimension=384).collection


if __name__ == "__main__":
    main()
