"""Where a route's time goes, in process (no HTTP): ``TurnRouter.route`` with its parts timed in place.

``python -m benchmarks.perf_profile --data DIR [--queries 200] [--cprofile]`` opens a ``Runtime``
on a stored data directory (copy it first: this takes its lock) and routes distinct BFCL
questions one at a time, each beside a bare encode of the same text, with the catalog lookup,
the query embedding, the candidate search (and the engine calls inside it), the pinned
scoring and the definitions read on a cache miss timed where they run. ``--cprofile`` adds the top functions by
cumulative time. A diagnostic for ``benchmarks/perf.py``; it records nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import Stopwatch
from benchmarks.perf import NAMESPACE, questions
from router.retrieval import candidates as candidates_module
from router.routing import turns as routing_module
from router.routing.turns import Turn
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings

PARTS = ("catalog record", "embed query", "candidates", "searches", "fetch definitions", "score pinned")


async def profile(data: Path, texts: Sequence[str], *, cprofile: bool) -> None:
    """Route ``texts`` in process and print the median of each part beside the bare encode."""
    runtime = Runtime(Settings(storage=StorageSettings(data=data), sync=SyncSettings(catalog=None)))
    await runtime.start()
    try:
        service, turns = runtime.service, runtime.turns
        store, embedder = service.index.store, service.index.embedder
        watch = Stopwatch()
        watch.wrap(service, "known", "catalog record")
        watch.wrap(embedder, "query", "embed query")
        watch.wrap(routing_module, "candidates", "candidates")
        watch.wrap(store, "score_names", "score pinned")
        watch.wrap(store.collection, "searches", "searches")
        watch.wrap(store, "_fetch", "fetch definitions")
        per_part: dict[str, list[float]] = defaultdict(list)
        totals, bare = [], []
        embedder.encode(list(texts[:8]))
        profiler = cProfile.Profile() if cprofile else None
        for text in texts:
            start = time.perf_counter()
            embedder.encode([text])
            bare.append(time.perf_counter() - start)
            await asyncio.sleep(0.01)
            watch.reset()
            if profiler is not None:
                profiler.enable()
            start = time.perf_counter()
            await turns.route(Turn(namespace=NAMESPACE, messages=[{"role": "user", "content": text}]))
            totals.append(time.perf_counter() - start)
            if profiler is not None:
                profiler.disable()
            for part in PARTS:
                per_part[part].append(watch.seconds.get(part, 0.0))
            await asyncio.sleep(0.01)
        count = store.count(NAMESPACE)
        print(f"{count:,} functions, {len(totals)} routes in process; medians:")
        print(f"  bare encode      {statistics.median(bare) * 1000:8.2f} ms")
        print(f"  route total      {statistics.median(totals) * 1000:8.2f} ms")
        for part in PARTS:
            median, mean = statistics.median(per_part[part]), statistics.mean(per_part[part])
            print(f"  {part:16} {median * 1000:8.2f} ms (mean {mean * 1000:.2f})")
        if profiler is not None:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
            print(out.getvalue())
    finally:
        routing_module.candidates = candidates_module.candidates
        await runtime.stop()


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments and profile."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="a stored data directory (a copy: it is locked)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cprofile", action="store_true", help="also print the top functions by cumulative time")
    args = parser.parse_args(argv)
    texts = questions(args.seed)[: args.queries]
    asyncio.run(profile(args.data, texts, cprofile=args.cprofile))


if __name__ == "__main__":
    main()
