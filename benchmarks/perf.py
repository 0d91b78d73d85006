"""Routing and sync at 1k, 10k and 100k functions, each figure beside its floor measured in the same run.

``python -m benchmarks.perf [--sizes 1000,10000,100000] [--quick]`` (``make bench-perf``). For each
size, a BFCL-grown catalog (``benchmarks.catalogs``) and a real ``router serve`` process in
embedded mode on 127.0.0.1, loaded through a lean HTTP/1.1 client (``benchmarks.perf_http``: the
load generator shares the server's cores) and, for the client's share, httpx:

1. **full sync**: ``PUT /v1/catalogs/bench`` of the whole catalog on an empty store, beside the
   bare library's batch encode of the same texts (``SentenceTransformer(path).encode``, fp32;
   a length-stratified sample of at most ``--floor-texts``), once before and once after;
   stores of ``--cache-from`` functions and more are built once and cached (``perf_store``);
2. **start to ready** with the catalog stored, with and without the catalog directory to pass
   over, beside a fresh interpreter loading the bare library and model;
3. **route latency**: distinct BFCL questions routed one at a time, each paired with the bare
   library's encode of the context it embedded, in this process, alternating which goes first;
4. **throughput** with 1, 4, 16 and 64 concurrent clients over disjoint slices of distinct
   questions (the server caches query vectors), in rounds that rotate the order of the levels;
   beside it, how much faster the bare library encodes batches, threads and 16 texts arriving
   at once than single texts (``benchmarks.perf_ceiling``);
5. **one changed function**: ``PUT`` of the full catalog with one description edited, then (with
   the server stopped) ``CatalogService.apply`` alone in this process, beside encoding that text;
6. **resident memory** of the server process (psutil RSS sampled while serving, and ``VmHWM``).

Every floor is the bare library (``benchmarks.perf_floor``), never the router's ``Embedder``. A run
that starts above load average 1.5 says it is not comparable and never replaces a comparable one
(``benchmarks.common.record_run``). Targets: route p50 <= 1.3x bare encode at 10k, <= 1.5x at 100k;
16 clients >= 2x sequential; full sync >= 0.9x bare encode; one change <= 0.3 s at 10k, <= 1 s at
100k; RSS <= 1.2 GB at 100k.
The table goes to stdout and to ``benchmarks/RESULTS.md`` under "## Performance (make bench-perf)".
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shlex
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.bfcl import load_questions
from benchmarks.common import RESULTS, Load, kept_subsection, machine, record_run, retimed_pool, say
from benchmarks.perf_ceiling import batching_ceiling, concurrent_ceiling, parallel_ceiling
from benchmarks.perf_floor import BareModel, bare_load_seconds
from benchmarks.perf_inproc import encode_rate, floor_sample, reconcile
from benchmarks.perf_load import client, lean_client, put_catalog, sequential, throughput
from benchmarks.perf_report import CLIENTS, SizeResult, apply_table, table
from benchmarks.perf_server import start, wait_for_log
from benchmarks.perf_store import CACHE, BuildInfo, Catalog, StoreCache, copy_store, load_catalog, product_version
from router.embedding import EmbedderPool
from router.retrieval.texts import template
from router.server.settings import EmbeddingSettings
from router.storage.base import INDEX_THRESHOLD

NAMESPACE = "bench"
HEADING = "## Performance (make bench-perf)"
# The hand-written analysis at the end of the section survives a new run (its date says which run it read).
DIAGNOSIS = "### Diagnosis"
LOGS = CACHE / "logs"
LATENCY_SECONDS = 600.0
LEVEL_SECONDS = 180.0
INDEX_SECONDS = 1800.0


@dataclass(frozen=True)
class Options:
    """What to run."""

    sizes: tuple[int, ...]
    seed: int
    queries: int
    per_level: int
    rounds: int
    repeats: int
    floor_texts: int
    cache_from: int
    rebuild: bool


def questions(seed: int) -> list[str]:
    """Every answered BFCL question's text, distinct, in a seeded order (routing only: nothing is tuned on them)."""
    texts = list(dict.fromkeys(q.text.strip() for q in load_questions() if q.text.strip()))
    random.Random(seed).shuffle(texts)
    return texts


def _load() -> float:
    return os.getloadavg()[0]


async def _build(n: int, catalog: Catalog, bare: BareModel, texts: list[str], work: Path) -> BuildInfo:
    """A full sync of the catalog through PUT on an empty store, between two bare encodes of its texts."""
    load_start = _load()
    empty = work / "empty"
    empty.mkdir(exist_ok=True)
    server = await asyncio.to_thread(start, data=work / "data", catalog=empty, log=LOGS / f"{n}-build.log")
    with server:
        before = await encode_rate(bare, texts, label="bare encode (before)")
        say(f"full sync of {n:,} functions through PUT")
        async with client(server, connections=1, timeout=600 + n * 0.2) as http:
            seconds = await put_catalog(http, server, NAMESPACE, catalog.body, label="full sync")
        after = await encode_rate(bare, texts, label="bare encode (after)")
        peak = server.high_water()
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    floor = (before + after) / 2
    return BuildInfo(n, seconds, floor, len(texts), when, (load_start, _load()), peak, product_version())


def _slices(queries: list[str], opts: Options) -> tuple[list[str], list[dict[int, list[str]]]]:
    """Disjoint query slices: the sequential latency run, then one per client count per round."""
    need = opts.queries + opts.rounds * len(CLIENTS) * opts.per_level
    if need > len(queries):
        raise SystemExit(f"{need} distinct queries needed, BFCL has {len(queries)}: lower --queries or --per-level")
    latency, rest = queries[: opts.queries], iter(queries[opts.queries :])
    rounds = [{c: [next(rest) for _ in range(opts.per_level)] for c in CLIENTS} for _ in range(opts.rounds)]
    return latency, rounds


async def _serve(result: SizeResult, catalog: Catalog, bare: BareModel, work: Path, opts: Options) -> None:
    """Start-up, routes, throughput and one-change PUTs on a server over the stored catalog."""
    latency_texts, rounds = _slices(questions(opts.seed), opts)
    result.load_floor = await asyncio.to_thread(bare_load_seconds, EmbeddingSettings().model)
    say(f"{result.size:,}: starting the server over the stored catalog and its catalog directory")
    log = LOGS / f"{result.size}-serve.log"
    offset = log.stat().st_size if log.exists() else 0  # the log is appended to, run after run
    server = await asyncio.to_thread(start, data=work / "data", catalog=work / "catalog", log=log)
    with server:
        result.ready_catalog, result.rss_ready = server.ready_seconds, server.rss()
        result.rss_start = server.max_rss  # spawn to ready: the catalog directory's first pass
        if result.size > INDEX_THRESHOLD:
            # Routes are measured on the steady state: after the background search index is swapped in.
            say(f"{result.size:,}: waiting for the search index (built in the background)")
            built = await asyncio.to_thread(wait_for_log, log, "index built", timeout=INDEX_SECONDS, offset=offset)
            result.index_seconds = server.ready_seconds + built if built is not None else None
        async with lean_client(server) as http, client(server, connections=1) as compare:
            deadline = time.monotonic() + LATENCY_SECONDS
            result.latency = await sequential(http, compare, bare, NAMESPACE, latency_texts, deadline=deadline)
            for i, slices in enumerate(rounds):
                order = CLIENTS[i % len(CLIENTS) :] + CLIENTS[: i % len(CLIENTS)]
                for clients in order:
                    say(f"{result.size:,}: round {i + 1}/{len(rounds)}, {clients} concurrent clients")
                    deadline = time.monotonic() + LEVEL_SECONDS
                    with server.phase(f"{clients} clients"):
                        done, seconds = await throughput(
                            http, NAMESPACE, slices[clients], clients=clients, deadline=deadline
                        )
                    previous = result.throughput.get(clients, (0, 0.0))
                    result.throughput[clients] = (previous[0] + done, previous[1] + seconds)
        async with client(server, connections=1, timeout=600 + result.size * 0.01) as http:
            bodies = [catalog.changed_body, catalog.body]
            for i in range(opts.repeats):
                label = f"PUT, 1 changed in {result.size:,}"
                with server.phase("put"):
                    result.put_changed.append(await put_catalog(http, server, NAMESPACE, bodies[i % 2], label=label))
        result.rss_serving, result.rss_high_water = server.max_rss, server.high_water()
        result.rss_clients, result.rss_put = server.peaks.get(f"{max(CLIENTS)} clients", 0), server.peaks.get("put", 0)
    server = await asyncio.to_thread(start, data=work / "data", catalog=None, log=LOGS / f"{result.size}-bare.log")
    with server:
        result.ready_bare, result.rss_bare = server.ready_seconds, server.rss()
    # The PUTs above wrote through the API: one start takes the catalog back from its file, the next is a restart.
    for restart in (False, True):
        server = await asyncio.to_thread(start, data=work / "data", catalog=work / "catalog", log=log)
        with server:
            result.ready_restart = server.ready_seconds if restart else 0.0


async def _measure(n: int, opts: Options, pool: EmbedderPool, bare: BareModel, scratch: Path) -> SizeResult:
    say(f"{n:,}: building the catalog")
    catalog = load_catalog(n, seed=opts.seed)
    work = scratch / str(n)
    (work / "catalog").mkdir(parents=True)
    (work / "catalog" / f"{NAMESPACE}.json").write_bytes(catalog.body)
    settings = EmbeddingSettings()
    cache, key = StoreCache(), StoreCache.key(catalog, model=settings.model, text=settings.text)
    cached = None if opts.rebuild or n < opts.cache_from else cache.load(key)
    if cached is not None:
        say(f"{n:,}: store from the cache ({key})")
        await asyncio.to_thread(copy_store, cached[0], work / "data")
        result = SizeResult(n, cached[1], from_cache=True)
    else:
        builder = template(settings.text)
        sample = floor_sample([builder(f) for f in catalog.functions], most=opts.floor_texts)
        build = await _build(n, catalog, bare, sample, work)
        if n >= opts.cache_from:
            say(f"{n:,}: caching the store ({key})")
            await asyncio.to_thread(cache.save, key, work / "data", build)
        result = SizeResult(n, build, from_cache=False)
    await _serve(result, catalog, bare, work, opts)
    say(f"{n:,}: the reconcile alone, in this process")
    result.reconciled = await reconcile(work / "data", pool, bare, catalog, namespace=NAMESPACE, repeats=opts.repeats)
    return result


async def run(opts: Options, load: Load) -> tuple[list[SizeResult], dict[str, str]]:
    """Measure every size; the batching ceiling once, with the first size. Also returns the router's backends.

    ``load`` times its CPU probes before each size, so a machine slowed during one part shows.
    """
    pool = retimed_pool(EmbeddingSettings())
    embedder = await pool.get(EmbeddingSettings().model)
    backends = dict(embedder.describe()["backends"])
    say(f"router embedding backends: {backends}")
    bare = await asyncio.to_thread(BareModel, EmbeddingSettings().model)
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-perf-") as tmp:
            for n in opts.sizes:
                python, vector = await asyncio.to_thread(load.probe)
                say(f"CPU probes before {n:,}: Python loop {python:.3f} s, matrix products {vector:.3f} s")
                results.append(await _measure(n, opts, pool, bare, Path(tmp)))
                if len(results) == 1:
                    queries = questions(opts.seed + 1)[:256]
                    results[0].ceiling = {b: batching_ceiling(bare, queries, batch=b) for b in (4, 16, 64)}
                    results[0].parallel = parallel_ceiling(bare, queries[:128], workers=2)
                    results[0].concurrent = concurrent_ceiling(bare, queries[:192], clients=16, workers=2)
                print(table(results), file=sys.stderr, flush=True)
    finally:
        pool.close()
    return results, backends


def report(results: Sequence[SizeResult], opts: Options, *, load: Load, command: str, backends: dict[str, str]) -> str:
    """The recorded section: when, where, the command, the table and how to read it."""
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    settings = EmbeddingSettings()
    cached = ", ".join(f"{r.size:,} (built by {r.build.product})" for r in results if r.from_cache) or "none"
    return "\n".join([
        f"Measured {when} on {machine()}; router code {product_version()}.",
        load.line(),
        f"Command: `{command}` (what `make bench-perf` runs with no flags).",
        "",
        table(results),
        "",
        "Where the in-process applies spent their time:",
        "",
        apply_table(results),
        "",
        f"Model `{settings.model}` (ROUTER_EMBEDDING_BACKEND `{settings.backend}`: query `{backends['query']}`, "
        f"micro-batch `{backends['batch']}`, catalog `{backends['catalog']}`; "
        f"threads {settings.threads or os.cpu_count()}), "
        f"text template `{settings.text}`, embedded mode (Qdrant Edge), one namespace holding the whole catalog. "
        f"Latency: {opts.queries} distinct BFCL questions; throughput: {opts.rounds} rounds x {opts.per_level} "
        f"distinct questions per client count; one-change figures are the median of {opts.repeats}. "
        f"Stores from the cache (built by an earlier run, sync figures from that build): {cached}.",
    ])  # fmt: skip


def kept_diagnosis(path: Path) -> str:
    """The ``### Diagnosis`` part of the recorded section, if any, to keep below the new figures."""
    return kept_subsection(path, HEADING, DIAGNOSIS)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments, measure, print the table and record it."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="catalog sizes, comma-separated")
    parser.add_argument("--quick", action="store_true", help="1k and 10k only, fewer queries (for development)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, help="sequential routes (default 300; 150 with --quick)")
    parser.add_argument("--per-level", type=int, help="queries per client count per round (default 120; 80 quick)")
    parser.add_argument("--rounds", type=int, help="throughput rounds (default 3; 2 with --quick)")
    parser.add_argument("--repeats", type=int, default=3, help="one-change applies and PUTs, median kept")
    parser.add_argument("--floor-texts", type=int, default=5000, help="most texts the sync floor encodes")
    parser.add_argument("--cache-from", type=int, default=100_000, help="cache stores of this many functions or more")
    parser.add_argument("--rebuild", action="store_true", help="ignore cached stores (and replace them)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="results file to update")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results file alone")
    args = parser.parse_args(argv)
    sizes = (1_000, 10_000) if args.quick else tuple(int(s) for s in args.sizes.split(",") if s.strip())
    opts = Options(
        sizes=sizes,
        seed=args.seed,
        queries=args.queries or (150 if args.quick else 300),
        per_level=args.per_level or (80 if args.quick else 120),
        rounds=args.rounds or (2 if args.quick else 3),
        repeats=max(1, args.repeats),
        floor_texts=args.floor_texts,
        cache_from=args.cache_from,
        rebuild=args.rebuild,
    )
    load = Load()
    results, backends = asyncio.run(run(opts, load))
    load.finish()
    command = shlex.join([".venv/bin/python", "-m", "benchmarks.perf", *(argv or sys.argv[1:])])
    body = report(results, opts, load=load, command=command, backends=backends)
    print(body)
    if not args.no_record:
        diagnosis = kept_diagnosis(args.results)
        if record_run(args.results, HEADING, f"{body}\n\n{diagnosis}" if diagnosis else body, load):
            say(f"recorded in {args.results}")


if __name__ == "__main__":
    main()
