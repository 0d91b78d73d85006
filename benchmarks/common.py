"""Helpers shared by the benchmarks: timing, progress bars, the machine line and ``RESULTS.md`` sections."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import platform
import sys
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from tqdm import tqdm

from router.catalog import FunctionDef
from router.embedding import Embedder, EmbedderPool, Progress
from router.runtime import Runtime
from router.settings import EmbeddingSettings
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

INTRO = (
    "Figures measured on this project's CI machine kind (2 cores, no GPU); "
    "timings are noisy, compare ratios within one run."
)
RESULTS = Path(__file__).with_name("RESULTS.md")
# A run that starts above this 1-minute load average (as ``uptime`` prints it) is not comparable.
COMPARABLE_LOAD = 1.5
COMPARABLE_MARK = "Comparable run:"
NOT_COMPARABLE_MARK = "**Not comparable**:"
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


def say(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


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


def machine() -> str:
    """Cores, CPU model and torch threads, in one line."""
    import torch

    model = platform.processor() or "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines() if "model name" in line]
        model = names[0] if names else model
    torch_info = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    return f"{os.cpu_count()} cores, CPU only, no GPU ({model}; {torch_info})"


def kept_subsection(path: Path, heading: str, mark: str) -> str:
    """The hand-written ``mark`` part (to its section's end) of the recorded ``heading`` section, if any."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        return ""
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    found = next((i for i in range(start, end) if lines[i].strip() == mark), None)
    return "\n".join(lines[found:end]).strip() if found is not None else ""


def record_section(path: Path, heading: str, body: str) -> None:
    """Replace (or append) the ``heading`` section of a results file, keeping the intro line first."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    if lines and lines[0] == INTRO:
        lines = lines[1:]
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        kept, rest = lines, []
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        kept, rest = lines[:start], lines[end:]
    blocks = [INTRO, "\n".join(kept).strip(), f"{heading}\n\n{body.strip()}", "\n".join(rest).strip()]
    path.write_text("\n\n".join(b for b in blocks if b) + "\n", encoding="utf-8")


def _uptime() -> tuple[float, float, float]:
    return os.getloadavg()


@dataclass
class Load:
    """The machine's load averages (1, 5, 15 minutes, as ``uptime`` prints them) at a run's start and end."""

    start: tuple[float, float, float] = field(default_factory=_uptime)
    end: tuple[float, float, float] | None = None

    def finish(self) -> Load:
        """Record the end of the run."""
        self.end = _uptime()
        return self

    @property
    def comparable(self) -> bool:
        """Whether the run started on a quiet machine (1-minute load at most ``COMPARABLE_LOAD``)."""
        return self.start[0] <= COMPARABLE_LOAD

    def line(self) -> str:
        """The sentence a recorded run carries: both loads and whether the run is comparable."""
        end = self.end or _uptime()
        loads = (
            f"load average {', '.join(f'{x:.2f}' for x in self.start)} at start, "
            f"{', '.join(f'{x:.2f}' for x in end)} at end (1, 5, 15 minutes)"
        )
        if self.comparable:
            return f"{COMPARABLE_MARK} {loads}."
        return (
            f"{NOT_COMPARABLE_MARK} {loads}; it started above {COMPARABLE_LOAD}, so other work shared the "
            "CPU and its timings say nothing about the router."
        )


def _section(path: Path, heading: str) -> str | None:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def record_run(path: Path, heading: str, body: str, load: Load) -> bool:
    """Record a timed run's section, unless it would replace a comparable run with one that is not.

    The body gets ``load.line()`` first unless it holds it already. A run that started on a loaded machine is recorded
    only where no comparable run is recorded yet (so the file says the figures are not to be
    trusted); it never replaces a comparable one.

    Returns:
        Whether the section was written.
    """
    recorded = _section(path, heading)
    if not load.comparable and recorded is not None and COMPARABLE_MARK in recorded:
        say(f"not recorded: load {load.start[0]:.2f} at start makes this run not comparable; {path} holds one that is")
        return False
    stated = COMPARABLE_MARK in body or NOT_COMPARABLE_MARK in body
    record_section(path, heading, body if stated else f"{load.line()}\n{body}")
    return True


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
