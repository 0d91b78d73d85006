"""How fast a catalog syncs, next to the floor set by the embedding model.

``python -m benchmarks.sync_bench [--functions 10000]`` (``make bench-sync``), on a temporary
data directory (embedded Qdrant Edge), with the default settings' model and text template:

a. the **floor**: the same function texts batch-encoded by the bare library
   (``SentenceTransformer(path).encode``, fp32, in this process: never the router's ``Embedder``),
   once before and once after the full sync; their mean is the floor, so other work on a shared
   machine weighs on both sides alike;
b. a **full sync** of the catalog through ``CatalogService.apply`` (the real reconcile path of
   a ``Runtime``: scroll stored hashes, diff, embed, upsert, record the catalog);
c. a **one-function change** (one description edited) and a **no-op** re-apply, each the median
   of a few runs, beside their own floors (the bare library encoding that one text; diffing in
   memory).

A run that starts above load average 1.5 says it is not comparable and never replaces a
comparable one in ``RESULTS.md`` (``benchmarks.common.record_run``).

The store's and embedder's methods are timed in place to show where each apply spends its time.
The tables are printed and recorded in ``benchmarks/RESULTS.md`` under "## Sync (make bench-sync)".
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import shlex
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.catalogs import build_catalog, change_one
from benchmarks.common import (
    RESULTS,
    Applied,
    Load,
    Stopwatch,
    apply_timed,
    disk_bytes,
    machine,
    median_applied,
    progress_bar,
    record_run,
    retimed_pool,
    say,
    timed,
)
from benchmarks.perf_floor import BareModel
from router.catalog.functions import FunctionDef
from router.retrieval.texts import template
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from sync.diff import plan

NAMESPACE = "bench"
HEADING = "## Sync (make bench-sync)"
PARTS = ("scroll hashes", "embed", "upsert")


@dataclass(frozen=True)
class Report:
    """Every figure of one run."""

    functions: int
    model: str
    text: str
    floors: tuple[float, float]
    full: Applied
    one_text_seconds: float
    changed: Applied
    diff_seconds: float
    noop: Applied
    payload_bytes: int
    disk_bytes: int

    @property
    def floor_seconds(self) -> float:
        """The bare encode's time: the mean of the runs before and after the full sync."""
        return sum(self.floors) / len(self.floors)


async def measure(n: int, *, seed: int, repeats: int) -> Report:
    """Run the three measurements on a fresh temporary data directory."""
    say(f"building a catalog of {n:,} functions")
    functions = build_catalog(n, seed=seed)
    changed_catalog, changed = change_one(functions, seed=seed)
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        settings = Settings(storage=StorageSettings(data=Path(tmp) / "data"), sync=SyncSettings(catalog=None))
        embedding = settings.embedding
        pool = retimed_pool(embedding)
        embedder = await pool.get(embedding.model)
        say(f"router embedding backends: {embedder.describe()['backends']}")
        builder = template(embedding.text)
        texts = [builder(f) for f in functions]
        bare = await asyncio.to_thread(BareModel, embedding.model)
        before = n / await asyncio.to_thread(bare.rate, texts, label="bare encode")
        one_text = await asyncio.to_thread(bare.one_median, builder(changed), repeats=repeats)
        stored = {f.name: f.content_hash for f in functions}
        diff = statistics.median(_diff_seconds(_fresh(functions), stored) for _ in range(repeats))

        runtime = Runtime(settings, embedders=pool, progress=progress_bar)
        await runtime.start()
        try:
            watch = Stopwatch()
            store = runtime.service.index.store
            watch.wrap(store, "hashes", "scroll hashes")
            watch.wrap(store, "upsert", "upsert")
            watch.wrap(embedder, "embed", "embed")
            say("full sync through CatalogService.apply")
            full = await apply_timed(runtime, NAMESPACE, functions, watch)
            after = n / await asyncio.to_thread(bare.rate, texts, label="bare encode again")
            runs, last = [], functions
            for _ in range(repeats):  # alternate, so that every apply changes exactly one function
                last = changed_catalog if last is functions else functions
                runs.append(await apply_timed(runtime, NAMESPACE, _fresh(last), watch))
            noop = median_applied([await apply_timed(runtime, NAMESPACE, _fresh(last), watch) for _ in range(repeats)])
            payload = sum(len(json.dumps(dict(f.definition), separators=(",", ":"))) for f in functions) // n
            disk = disk_bytes(Path(tmp) / "data")
        finally:
            await runtime.stop()
    floors = (before, after)
    return Report(
        n, embedding.model, embedding.text, floors, full, one_text, median_applied(runs), diff, noop, payload, disk
    )


def _fresh(functions: Sequence[FunctionDef]) -> list[FunctionDef]:
    """New objects for the same definitions, as a source delivers on every pass: no cached hashes."""
    return [dataclasses.replace(f) for f in functions]


def _diff_seconds(functions: Sequence[FunctionDef], stored: dict[str, str]) -> float:
    """Seconds to diff in memory: hash every definition, then plan."""
    return timed(lambda: plan(functions, stored))


def _seconds(value: float) -> str:
    return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


def tables(report: Report) -> str:
    """The results as markdown: figures beside their floors, then where each apply spent its time."""
    n, full = report.functions, report.full
    rate, floor_rate = n / full.seconds, n / report.floor_seconds
    changed, noop, floor = report.changed, report.noop, report.floor_seconds
    rows = [
        (f"full sync, {n:,} functions added", f"{rate:,.0f} fn/s ({_seconds(full.seconds)})",
         f"{floor_rate:,.0f} fn/s ({_seconds(floor)})",
         "bare sentence-transformers fp32 batch encode of the same texts, mean of 2 runs", full.seconds / floor),
        ("one function changed", _seconds(changed.seconds), _seconds(report.one_text_seconds),
         "bare encode of that one text", changed.seconds / report.one_text_seconds),
        ("no-op re-apply", _seconds(noop.seconds), _seconds(report.diff_seconds),
         f"in-memory diff (hash {n:,} definitions + plan)", noop.seconds / report.diff_seconds),
    ]  # fmt: skip
    lines = [
        "| step | measured | floor | floor is | time / floor |",
        "| --- | ---: | ---: | --- | ---: |",
        *(f"| {a} | {b} | {c} | {d} | {e:,.2f}x |" for a, b, c, d, e in rows),
        "",
        "Where each apply spent its time (store and embedder methods timed in place):",
        "",
        "| apply | summary | total | " + " | ".join(PARTS) + " | rest | longest event-loop stall |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in PARTS) + " | ---: | ---: |",
    ]
    for label, applied in (("full sync", full), ("one changed", changed), ("no-op", noop)):
        parts = [applied.parts.get(p, 0.0) for p in PARTS]
        counts = ", ".join(f"{k} {v:,}" for k, v in applied.summary.counts().items() if v)
        cells = " | ".join(_seconds(p) for p in parts)
        rest, stall = _seconds(applied.seconds - sum(parts)), _seconds(applied.stall)
        lines.append(f"| {label} | {counts} | {_seconds(applied.seconds)} | {cells} | {rest} | {stall} |")
    upsert, embed = full.parts.get("upsert", 0.0), full.parts.get("embed", 0.0)
    beyond = full.seconds - embed
    lines += [
        "",
        f"The full sync's own work beyond embedding took {_seconds(beyond)} ({beyond / full.seconds:.1%} of it); "
        f"its embedding ran at {n / embed:,.0f} fn/s against the floor's {floor_rate:,.0f}, so a gap between "
        "those two is the machine's load changing during the run, not the reconcile.",
        "",
        f"Model `{report.model}`, text template `{report.text}`; bare encode before the full sync "
        f"{n / report.floors[0]:,.0f} fn/s, after it {n / report.floors[1]:,.0f} fn/s; full-sync upsert "
        f"{n / upsert:,.0f} points/s; definitions average {report.payload_bytes:,} bytes of JSON; "
        f"data directory {report.disk_bytes / 1e6:,.1f} MB allocated on disk after the runs.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments, measure, print the tables and record them."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.sync_bench", description="Sync speed beside the embedding floor."
    )
    parser.add_argument("--functions", type=int, default=10_000, help="catalog size (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="catalog seed (default 0)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the small applies, median kept")
    parser.add_argument("--results", type=Path, default=RESULTS, help="results file to update")
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results file alone")
    args = parser.parse_args(argv)
    load = Load()
    report = asyncio.run(measure(args.functions, seed=args.seed, repeats=max(1, args.repeats)))
    load.finish()
    body = tables(report)
    print(load.line())
    print(body)
    if not args.no_record:
        command = shlex.join([".venv/bin/python", "-m", "benchmarks.sync_bench", *(argv or sys.argv[1:])])
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        meta = (
            f"Measured {when} on {machine()}.\n{load.line()}\nCommand: `{command}` (what `make bench-sync` runs).\n\n"
        )
        if record_run(args.results, HEADING, meta + body, load):
            say(f"recorded in {args.results}")


if __name__ == "__main__":
    main()
