"""What a recorded benchmark run says about its machine, and how it goes into ``RESULTS.md``.

A timed run carries the machine line, its load average at start and end and a CPU probe taken
through it (``Load``); ``record_run`` writes its section, never replacing a comparable run with
one that is not. ``record_section`` and ``kept_subsection`` serve the untimed benchmarks.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter

import numpy as np

__all__ = [
    "COMPARABLE_LOAD",
    "COMPARABLE_MARK",
    "COMPARABLE_SPREAD",
    "INTRO",
    "NOT_COMPARABLE_MARK",
    "RESULTS",
    "Load",
    "cpu_probe",
    "kept_subsection",
    "machine",
    "record_run",
    "record_section",
    "say",
    "vector_probe",
]

INTRO = (
    "Figures measured on this project's CI machine kind (2 cores, no GPU); "
    "timings are noisy, compare ratios within one run."
)
RESULTS = Path(__file__).with_name("RESULTS.md")
# A run that starts above this 1-minute load average (as ``uptime`` prints it) is not comparable.
COMPARABLE_LOAD = 1.5
# Nor is one whose CPU probes are further apart than this (slowest over fastest): the probe
# itself moves by up to about 1.4x from one minute to the next on an idle shared machine.
COMPARABLE_SPREAD = 1.5
COMPARABLE_MARK = "Comparable run:"
NOT_COMPARABLE_MARK = "**Not comparable**:"
PROBE_LOOPS = 5_000_000
PROBE_PRODUCTS = 150


def say(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


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


def cpu_probe(loops: int = PROBE_LOOPS) -> float:
    """Seconds a fixed pure-Python loop takes right now (the best of three tries).

    The load average counts the processes of this machine only; a host that slows the whole
    machine down (a shared or throttled CPU) shows in this probe instead.
    """

    def loop() -> None:
        total = 0
        for i in range(loops):
            total += i

    return _best_of_three(loop)


def vector_probe(products: int = PROBE_PRODUCTS) -> float:
    """Seconds ``products`` fixed float32 matrix products take right now (one BLAS thread; the best of three).

    An encoder's speed rests on the vector units and memory, which a neighbour on the host can
    slow while the pure-Python loop of ``cpu_probe`` runs at its usual speed. One BLAS thread,
    whatever the process set: loading the router's model in a benchmark's process limits BLAS to
    one thread, and a probe taken before that ran twice as fast as those after it.
    """
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    left = rng.standard_normal((256, 384), dtype=np.float32)
    right = rng.standard_normal((384, 1536), dtype=np.float32)

    def multiply() -> None:
        for _ in range(products):
            left @ right

    with threadpool_limits(1, user_api="blas"):
        return _best_of_three(multiply)


def _best_of_three(work: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(3):
        start = perf_counter()
        work()
        best = min(best, perf_counter() - start)
    return best


def _spread(timings: list[float]) -> float:
    return max(timings) / min(timings) if timings else 1.0


def _range(what: str, timings: list[float]) -> str:
    return f"{what} {min(timings):.3f}-{max(timings):.3f} s ({_spread(timings):.2f}x apart)"


@dataclass
class Load:
    """The machine's state over a timed run: load averages at start and end, and CPU probes.

    ``start`` and ``end`` are the 1, 5 and 15-minute load averages as ``uptime`` prints them;
    ``probes`` the seconds of ``cpu_probe`` (of ``loops`` iterations) and ``vector_probes`` those
    of ``vector_probe`` (of ``products``), at the start, at each ``probe()`` (a benchmark takes
    one before each part) and at ``finish()``.
    """

    start: tuple[float, float, float] = field(default_factory=_uptime)
    end: tuple[float, float, float] | None = None
    probes: list[float] = field(default_factory=list)
    vector_probes: list[float] = field(default_factory=list)
    loops: int = PROBE_LOOPS
    products: int = PROBE_PRODUCTS

    def __post_init__(self) -> None:
        if not self.probes:
            self.probe()

    def probe(self) -> tuple[float, float]:
        """Time both CPU probes now and keep them."""
        self.probes.append(cpu_probe(self.loops))
        self.vector_probes.append(vector_probe(self.products))
        return self.probes[-1], self.vector_probes[-1]

    def finish(self) -> Load:
        """Record the end of the run."""
        self.probe()
        self.end = _uptime()
        return self

    @property
    def spread(self) -> float:
        """The slowest CPU probe over the fastest, of the probe that moved most (1.0: the machine kept its speed)."""
        return max(_spread(self.probes), _spread(self.vector_probes))

    @property
    def comparable(self) -> bool:
        """Whether the run started on a quiet machine that kept its speed.

        The 1-minute load at start is at most ``COMPARABLE_LOAD``, and the CPU probes stay within
        ``COMPARABLE_SPREAD`` of each other.
        """
        return self.start[0] <= COMPARABLE_LOAD and self.spread <= COMPARABLE_SPREAD

    def line(self) -> str:
        """The sentence a recorded run carries: both loads, the CPU probes and whether the run is comparable."""
        end = self.end or _uptime()
        loads = (
            f"load average {', '.join(f'{x:.2f}' for x in self.start)} at start, "
            f"{', '.join(f'{x:.2f}' for x in end)} at end (1, 5, 15 minutes)"
        )
        probes = (
            f"CPU probes over {len(self.probes)} timings (best of 3 each): {_range('a pure-Python loop', self.probes)}"
        )
        if self.vector_probes:
            probes += f", {_range('float32 matrix products', self.vector_probes)}"
        if self.comparable:
            return f"{COMPARABLE_MARK} {loads}; {probes}."
        if self.start[0] > COMPARABLE_LOAD:
            why = f"it started above {COMPARABLE_LOAD}, so other work shared the CPU"
        else:
            why = f"the machine's speed moved by more than {COMPARABLE_SPREAD}x during it, from outside"
        return f"{NOT_COMPARABLE_MARK} {loads}; {probes}; {why}, and its timings say nothing about the router."


def _section(path: Path, heading: str) -> str | None:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    start = next((i for i, line in enumerate(lines) if line.strip() == heading), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


def record_run(path: Path, heading: str, body: str, load: Load) -> bool:
    """Record a timed run's section, unless it would replace a comparable run with one that is not.

    The body gets ``load.line()`` first unless it holds it already. A run that is not comparable
    (a loaded machine, or one whose speed moved) is recorded only where no comparable run is
    recorded yet (so the file says the figures are not to be trusted); it never replaces a
    comparable one.

    Returns:
        Whether the section was written.
    """
    recorded = _section(path, heading)
    if not load.comparable and recorded is not None and COMPARABLE_MARK in recorded:
        say(f"not recorded: this run is not comparable ({load.line()}); {path} holds one that is")
        return False
    stated = COMPARABLE_MARK in body or NOT_COMPARABLE_MARK in body
    record_section(path, heading, body if stated else f"{load.line()}\n{body}")
    return True
