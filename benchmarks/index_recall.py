"""Recall and latency of HNSW-indexed embedded search against exact search, on real embeddings.

``python -m benchmarks.index_recall [--data DIR] [--size 10000] [--queries 200]`` (``make bench-index``).
It takes a stored data directory (default: the perf benchmark's cached 100k store, else a store of
``--size`` BFCL-grown functions it syncs itself), copies its functions collection, and:

1. adds namespaces beside the stored one: ``small`` (500 points), ``mid`` (8,000: just above
   the full-scan threshold) and ``medium`` (a fifth of the stored one), near-copies of stored
   vectors, so that the filtered search of small and mid-sized tenants inside a big indexed
   collection is measured too;
2. searches each namespace exactly (top-20, filtered by namespace, payload returned, as the router
   searches): the ground truth and the latency to beat;
3. builds the HNSW index out of process exactly as the service does (``router.storage.edge_index``,
   same command, same configuration) and times it;
4. searches the indexed copy with each ``hnsw_ef`` and reports recall@20 against exact (mean and
   worst query), p50/p95 latency, and exact search on the indexed copy;
5. times exact search alone at 10k, 20k and 50k points (the cost the index threshold bounds),
   in three rounds that rotate the order of the sizes.

Queries are BFCL development questions, encoded by the default model. The tables go to stdout and
to ``benchmarks/RESULTS.md`` under "## HNSW recall (make bench-index)".
"""

from __future__ import annotations

import argparse
import asyncio
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from statistics import mean
from time import perf_counter
from typing import Any

import numpy as np
import qdrant_edge as qe
from router.storage.edge_index import HnswParams, build_command
from router.storage.edge_shard import shard_config

from benchmarks.bfcl import load_questions
from benchmarks.common import RESULTS, kept_subsection, machine, progress_bar, record_section, say
from benchmarks.perf_store import CACHE, copy_store, load_catalog
from router.embedding import DEFAULT_MODEL
from router.server.runtime import Runtime, embedder_loader
from router.server.settings import EmbeddingSettings, Settings, StorageSettings
from router.storage.base import DENSE, HNSW_EF, CollectionSpec

HEADING = "## HNSW recall (make bench-index)"
TOP = 20
SMALL = 500
# Just above the full-scan threshold (10,000 KB of 384-d vectors is 6,667): the hardest filtered graph search.
MID = 8_000
ROUNDS = 3
# Search exactly unless an index returns at least this share of the exact top-20.
RULE = 0.99
WORST_QUERY = 0.9
# Notes written by hand at the end of the recorded section (across runs) survive a new run.
NOTES = "### Across runs"
SIZES = (10_000, 20_000, 50_000)


def _namespace(value: str) -> qe.Filter:
    return qe.Filter(must=[qe.FieldCondition(key="namespace", match=qe.MatchValue(value))])


def _search(
    shard: qe.EdgeShard, vector: list[float], namespace: str, params: qe.SearchParams
) -> tuple[list[str], float]:
    request = qe.QueryRequest(
        limit=TOP,
        query=qe.Query.Nearest(vector, using=DENSE),
        filter=_namespace(namespace),
        with_payload=True,
        params=params,
    )
    start = perf_counter()
    found = shard.query(request)
    return [str(p.id) for p in found], perf_counter() - start


def _pct(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000, q))


def _functions_dir(data: Path) -> Path:
    found = sorted(data.glob("functions-*"), key=lambda p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()))
    if not found:
        raise SystemExit(f"no functions collection in {data}")
    return found[-1]


def _default_data(size: int, scratch: Path) -> Path:
    """The perf benchmark's cached 100k store, else a store of ``size`` BFCL-grown functions built here."""
    cached = sorted(CACHE.glob("store-100000-*/data"))
    if cached:
        return cached[-1]
    say(f"no cached 100k store in {CACHE} (make bench-perf builds it): syncing {size:,} functions")
    data = scratch / "built"
    settings = Settings(storage=StorageSettings(data=data, index=False))
    functions = load_catalog(size, seed=0).functions

    async def sync() -> None:
        runtime = Runtime(settings, progress=progress_bar)
        await runtime.start()
        try:
            await runtime.service.apply("bench", functions, source="bench")
        finally:
            await runtime.stop()

    asyncio.run(sync())
    return data


def _scroll(shard: qe.EdgeShard, limit: int) -> list[Any]:
    records: list[Any] = []
    offset: Any = None
    while len(records) < limit:
        request = qe.ScrollRequest(
            offset=offset, limit=min(2048, limit - len(records)), with_payload=True, with_vector=True
        )
        page, offset = shard.scroll(request)
        records.extend(page)
        if offset is None:
            break
    return records


def _tenants(stored: int) -> dict[str, int]:
    """The namespaces added beside the stored one, by size."""
    tenants = {"small": SMALL, "medium": stored // 5}
    if stored >= 2 * MID:
        tenants["mid"] = MID
    return tenants


def _add_namespaces(shard: qe.EdgeShard, records: Sequence[Any], tenants: dict[str, int]) -> None:
    """Near-copies of stored points (disjoint slices while there are enough) in new namespaces, new ids."""
    rng = np.random.default_rng(0)
    offset = 0
    for name, count in tenants.items():
        chosen = [records[(offset + i) % len(records)] for i in range(count)]
        offset += count
        for start in range(0, count, 1024):
            batch = []
            for record in chosen[start : start + 1024]:
                vector = np.asarray(record.vector[DENSE], dtype=np.float32)
                vector = vector + rng.normal(0, 0.05 / np.sqrt(vector.size), vector.size).astype(np.float32)
                payload = {**dict(record.payload or {}), "namespace": name}
                batch.append(qe.Point(id=str(uuid.uuid4()), vector={DENSE: vector.tolist()}, payload=payload))
            shard.update(qe.UpdateOperation.upsert_points(batch))


def _exact_by_size(records: Sequence[Any], spec: CollectionSpec, vectors: list[list[float]], root: Path) -> list[str]:
    """Exact search of plain shards of each size, in rounds that rotate the order (load changes evenly)."""
    shards: dict[int, qe.EdgeShard] = {}
    for size in (s for s in SIZES if s <= len(records)):
        shards[size] = shard = qe.EdgeShard.create(str(root / f"plain-{size}"), shard_config(spec))
        shard.update(qe.UpdateOperation.create_field_index("namespace", qe.KeywordIndexParams(is_tenant=True)))
        for start in range(0, size, 1024):
            batch = [
                qe.Point(id=r.id, vector={DENSE: r.vector[DENSE]}, payload={**dict(r.payload or {}), "namespace": "ns"})
                for r in records[start : min(start + 1024, size)]
            ]
            shard.update(qe.UpdateOperation.upsert_points(batch))
    times: dict[int, list[float]] = {size: [] for size in shards}
    order = list(shards)
    for _ in range(ROUNDS):
        for size in order:
            times[size].extend(_search(shards[size], v, "ns", qe.SearchParams(exact=True))[1] for v in vectors)
        order = order[1:] + order[:1]
    rows = ["| points | exact p50 | exact p95 |", "| ---: | ---: | ---: |"]
    for size, shard in shards.items():
        shard.close()
        shutil.rmtree(root / f"plain-{size}")
        rows.append(f"| {size:,} | {_pct(times[size], 50):.1f} ms | {_pct(times[size], 95):.1f} ms |")
    return rows


def _measure(
    shard: qe.EdgeShard,
    vectors: list[list[float]],
    namespace: str,
    truth: list[list[str]],
    efs: Sequence[int],
    worst: dict[int, tuple[float, float]],
) -> list[str]:
    """Table rows of one namespace; ``worst`` keeps, per ef, the lowest mean and the lowest single recall."""
    rows = []
    for ef in efs:
        recalls, times = [], []
        for vector, expected in zip(vectors, truth, strict=True):
            got, seconds = _search(shard, vector, namespace, qe.SearchParams(hnsw_ef=ef))
            recalls.append(len(set(got) & set(expected)) / max(1, len(expected)))
            times.append(seconds)
        mark = " (default)" if ef == HNSW_EF else ""
        low_mean, low = worst.get(ef, (1.0, 1.0))
        worst[ef] = (min(low_mean, mean(recalls)), min(low, min(recalls)))
        rows.append(
            f"| {namespace} | ef={ef}{mark} | {mean(recalls):.4f} | {min(recalls):.2f} "
            f"| {_pct(times, 50):.1f} ms | {_pct(times, 95):.1f} ms |"
        )
        say(rows[-1])
    times = [_search(shard, v, namespace, qe.SearchParams(exact=True))[1] for v in vectors]
    rows.append(f"| {namespace} | exact | 1.0000 | 1.00 | {_pct(times, 50):.1f} ms | {_pct(times, 95):.1f} ms |")
    return rows


def _verdict(worst: dict[int, tuple[float, float]]) -> str:
    rule = f"a mean recall@20 >= {RULE} in every namespace and no query below {WORST_QUERY}"
    passing = [ef for ef, (low_mean, low) in sorted(worst.items()) if low_mean >= RULE and low >= WORST_QUERY]
    if not passing:
        return f"No ef measured gives {rule}."
    low_mean, low = worst[passing[0]]
    return f"Smallest ef giving {rule}: {passing[0]} (lowest namespace mean {low_mean:.4f}, worst query {low:.2f})."


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a data directory (copied, never written)")
    parser.add_argument("--size", type=int, default=10_000, help="store to build when none is given or cached")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--efs", default="64,128,256,512,1024")
    parser.add_argument("--m", type=int, default=HnswParams.m)
    parser.add_argument("--ef-construct", type=int, default=HnswParams.ef_construct)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args(argv)
    efs = [int(x) for x in args.efs.split(",")]
    hnsw = HnswParams(m=args.m, ef_construct=args.ef_construct)
    started = time.time()
    questions = load_questions(held_out=False)
    texts = [q.text for q in questions[:: max(1, len(questions) // args.queries)][: args.queries]]
    embedder = embedder_loader(EmbeddingSettings())(DEFAULT_MODEL)
    vectors = [[float(x) for x in v] for v in embedder.encode(texts)]
    embedder.close()
    with tempfile.TemporaryDirectory(prefix="bench-index-") as tmp:
        data = args.data or _default_data(args.size, Path(tmp))
        copy = Path(tmp) / "shard"
        copy_store(_functions_dir(data), copy)
        spec = CollectionSpec(name="shard", dense_size=len(vectors[0]), sparse=True, tenant_field="namespace")
        shard = qe.EdgeShard.load(str(copy))
        stored = int(shard.count(qe.CountRequest(exact=True)))
        tenants = _tenants(stored)
        records = _scroll(shard, max(*SIZES, sum(tenants.values())))
        big = str(dict(records[0].payload or {})["namespace"])
        say(f"{stored:,} points in namespace {big!r}; adding {tenants}")
        _add_namespaces(shard, records, tenants)
        points = int(shard.count(qe.CountRequest(exact=True)))
        names = [big, *sorted(tenants, key=lambda n: -tenants[n])]
        truth = {n: [_search(shard, v, n, qe.SearchParams(exact=True))[0] for v in vectors] for n in names}
        sizes = _exact_by_size(records, spec, vectors, Path(tmp))
        shard.flush()
        shard.close()
        say(f"building the HNSW index of {points:,} points out of process ({hnsw})")
        start = perf_counter()
        subprocess.run(build_command(copy, spec, hnsw, priority=0), check=True, capture_output=True)  # noqa: S603
        build_seconds = perf_counter() - start
        shard = qe.EdgeShard.load(str(copy))
        worst: dict[int, tuple[float, float]] = {}
        rows = [
            "| namespace | search | recall@20 mean | recall@20 min | p50 | p95 |",
            "| --- | --- | ---: | ---: | ---: | ---: |",
        ]
        for name in names:
            rows.extend(_measure(shard, vectors, name, truth[name], efs, worst))
        shard.close()
    counts = {big: stored, **tenants}
    body = "\n".join(
        [
            f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}; whole run {time.time() - started:.0f} s.",
            f"Command: `{shlex.join(['.venv/bin/python', '-m', 'benchmarks.index_recall', *(argv or sys.argv[1:])])}`.",
            "",
            f"Collection of {points:,} points ({', '.join(f'{n!r}: {c:,}' for n, c in counts.items())}), "
            f"{len(vectors)} BFCL development questions (all-MiniLM-L6-v2), top-{TOP} filtered by namespace, "
            f"payload returned. HNSW m={hnsw.m}, ef_construct={hnsw.ef_construct}, full-scan threshold "
            f"{HnswParams.full_scan_threshold_kb:,} KB; built out of process in {build_seconds:.0f} s "
            "(at niceness 0 here; the service builds at 19). "
            "Recall is against exact search of the same copy; min is the worst query.",
            "",
            *rows,
            "",
            _verdict(worst),
            "",
            "Exact search alone (plain segment, one namespace, same queries):",
            "",
            *sizes,
        ]
    )
    print(body)
    if not args.no_record:
        notes = kept_subsection(RESULTS, HEADING, NOTES)
        record_section(RESULTS, HEADING, f"{body}\n\n{notes}" if notes else body)


if __name__ == "__main__":
    main()
