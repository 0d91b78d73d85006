"""Helpers shared by the benchmarks: timing, progress bars and the router pieces they drive.

The machine line, load and CPU probe, and ``RESULTS.md`` sections live in ``benchmarks.recording``
and are re-exported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from tqdm import tqdm

from benchmarks.recording import (
    COMPARABLE_LOAD,
    INTRO,
    RESULTS,
    Load,
    kept_subsection,
    machine,
    record_run,
    record_section,
    say,
)
from router.catalog.functions import FunctionDef
from router.embedding import Embedder, EmbedderPool, Progress
from router.server.runtime import Runtime
from router.server.settings import EmbeddingSettings
from sync.diff import Summary

__all__ = [
    "COMPARABLE_LOAD",
    "INTRO",
    "RESULTS",
    "Applied",
    "Load",
    "Stopwatch",
    "apply_timed",
    "disk_bytes",
    "kept_subsection",
    "machine",
    "median_applied",
    "progress_bar",
    "record_run",
    "record_section",
    "retimed_pool",
    "say",
    "timed",
    "timed_async",
]

# In embedded mode the event loop also serves HTTP: a stall is how long a request would wait.
TICK = 0.01


@dataclass
class Stopwatch:
    """Seconds spent in wrapped methods, by label, since the last ``reset``."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def reset(self) -> None:
        self.seconds = defaultdict(float)

    @contextlib.contextmanager
    def timing(self, label: str) -> Iterator[None]:
        """Add the time spent in the block to ``label``."""
        start = perf_counter()
        try:
            yield
        finally:
            self.seconds[label] += perf_counter() - start

    def wrap(self, owner: object, method: str, label: str) -> None:
        """Time every call of ``owner.method`` (every await, for a coroutine method) under ``label``."""
        original: Callable[..., Any] = getattr(owner, method)

        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.timing(label):
                return original(*args, **kwargs)

        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            with self.timing(label):
                return await original(*args, **kwargs)

        setattr(owner, method, timed_async if inspect.iscoroutinefunction(original) else timed)


@dataclass(frozen=True)
class Applied:
    """One timed ``apply``: its total, its parts, and what the reconcile reported."""

    seconds: float
    parts: dict[str, float]
    summary: Summary
    stall: float


async def _stalls(longest: list[float]) -> None:
    """Keep in ``longest[0]`` the longest time the event loop could not run this ticker."""
    while True:
        start = perf_counter()
        await asyncio.sleep(TICK)
        longest[0] = max(longest[0], perf_counter() - start - TICK)


async def apply_timed(
    runtime: Runtime, namespace: str, functions: Sequence[FunctionDef], watch: Stopwatch, *, source: str = "bench"
) -> Applied:
    """``CatalogService.apply`` timed, with the parts ``watch`` wraps and the longest event-loop stall."""
    watch.reset()
    longest = [0.0]
    ticker = asyncio.create_task(_stalls(longest))
    start = perf_counter()
    try:
        summary = await runtime.service.apply(namespace, functions, source=source)
    finally:
        seconds = perf_counter() - start
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
    return Applied(seconds, dict(watch.seconds), summary, longest[0])


def median_applied(runs: Sequence[Applied]) -> Applied:
    """The run of median duration."""
    return sorted(runs, key=lambda a: a.seconds)[len(runs) // 2]


def progress_bar(label: str, total: int, *, unit: str = "fn") -> Progress:
    """A tqdm bar on stderr, fed ``(done, total)`` and closed when done."""
    bar = tqdm(total=total, desc=label, unit=unit, file=sys.stderr, leave=False)

    def report(done: int, total: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return report


async def timed_async(work: Awaitable[object]) -> float:
    """Seconds spent awaiting ``work``."""
    start = perf_counter()
    await work
    return perf_counter() - start


def timed(work: Callable[[], object]) -> float:
    """Seconds spent calling ``work``."""
    start = perf_counter()
    work()
    return perf_counter() - start


def disk_bytes(root: Path) -> int:
    """Bytes allocated on disk: Qdrant preallocates sparse files (~300 MB apparent for a small store)."""
    return sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())


def retimed_pool(settings: EmbeddingSettings) -> EmbedderPool:
    """The router's models as configured, their backends timed afresh in this run (``router warm``).

    The choice is cached for the machine: a choice timed under load by an earlier run would
    otherwise serve this one, and the servers the benchmark starts read the cache this writes.
    """

    def load(model: str) -> Embedder:
        embedder = Embedder(
            model,
            backend=settings.backend,
            device=settings.device,
            batch_size=settings.batch_size,
            threads=settings.threads,
            lanes=settings.lanes,
            cache_dir=settings.cache_dir,
            remeasure=True,
        )
        say("router embedding backends (timed now; median ms per text, * chosen):")
        say("\n".join(embedder.choice.table()))
        return embedder

    return EmbedderPool(load)
