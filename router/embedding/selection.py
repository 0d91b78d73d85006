"""Choosing the embedding backend of each shape of work by measurement on this machine.

The service embeds three shapes of work: one query (a route), a micro-batch of concurrent
queries, and catalog batches (a sync). Which backend is fastest for each depends on the CPU
(an ONNX export can be twice as slow as PyTorch per query on one CPU and faster on another;
bf16 pays only where the CPU has bf16 instructions), so it is measured, not assumed:

- every candidate must give the fp32 vectors (cosine at least ``AGREEMENT`` on probe texts);
- candidates run interleaved, in a rotating order, for several rounds, so a burst of load
  from elsewhere hits all of them alike;
- a candidate replaces the reference (PyTorch fp32, the simplest path) only when it is clearly
  faster: by ``MARGIN`` in both its median and its best round.

The choice is cached (``BackendChoice``) under a key of the model files, the CPU and the
library versions, so later starts on the same machine skip the timing.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from router.embedding.batching import Vectors

__all__ = [
    "AGREEMENT",
    "MARGIN",
    "REFERENCE",
    "RUNS",
    "SHAPES",
    "BackendChoice",
    "agreeing",
    "cache_key",
    "choose",
    "cpu_fingerprint",
    "cpu_flags",
    "cpu_supports_bf16",
    "cpuinfo",
    "load_choice",
    "measure",
    "save_choice",
    "select",
    "workloads",
]

Run = Callable[[list[str]], Vectors]
Clock = Callable[[], float]
REFERENCE = "torch"
SHAPES = ("query", "batch", "catalog")
# Vectors must match the fp32 reference this closely (cosine, every probe) to be a candidate.
AGREEMENT = 0.9999
# A candidate must take at most this fraction of the reference's time to replace it.
MARGIN = 0.9
# The revision of how the backends run (bf16 lengths padded since 2): cached timings of another are stale.
RUNS = 2

QUERIES = (
    "Find me a flight from Lisbon to Rome next Friday",
    "what's the weather like in Paris?",
    "ok",
    "Cancel my last order and refund it to the card I paid with, please",
    "list the open pull requests in the payments repository that nobody has reviewed yet",
    "book a table for two tonight",
    "How many vacation days do I have left this year, and can I carry them over to next year?",
    "restart the staging deployment",
    "Convert 250 euros to Japanese yen at today's rate",
    "send the Q3 report to the finance team and ask Dana to review the revenue section by Thursday",
    "who is on call?",
    "Quels sont les vols pour Paris demain matin ?",
    "Create a calendar event called design review on Monday at 10 with Ana and Luis",
    "get me the logs of the checkout service from the last hour where the status code was 500",
    "translate this to German",
    "Show the three cheapest hotels near the conference centre in Berlin for two nights from the 14th",
)
CATALOG = (
    "get_current_weather: Get the current weather in a given location",
    "search_flights: Search available flight offers between two airports on a date",
    "create_event: Create a calendar event with a title, a start time, a duration and attendees",
    "refund_order: Refund an order, fully or in part, to the original payment method",
    "list_pull_requests: List the pull requests of a repository, filtered by state, author or reviewer",
    "convert_currency: Convert an amount from one currency to another at the latest exchange rate",
    "restart_deployment: Restart every pod of a Kubernetes deployment, one at a time",
    "send_email: Send an email with a subject, a body, recipients and optional attachments",
)


def workloads(*, batch_size: int) -> dict[str, list[list[str]]]:
    """The calls each shape is timed with, in one round: distinct texts, as the service sees them.

    One query: each probe question alone. A micro-batch: the questions together (mixed
    lengths, as concurrent routes arrive). Catalog batches: ``batch_size * 4`` function texts,
    sorted by length as a sync sorts them.
    """
    catalog = sorted((f"{CATALOG[i % len(CATALOG)]} ({i})" for i in range(batch_size * 4)), key=len)
    return {
        "query": [[q] for q in QUERIES[:8]],
        "batch": [list(QUERIES)],
        "catalog": [catalog],
    }


def agreeing(candidates: Mapping[str, Run], *, reference: str = REFERENCE) -> dict[str, float]:
    """Each candidate's worst cosine to the reference's vectors on the probe texts."""
    probes = [*QUERIES, *CATALOG]
    expected = candidates[reference](probes)
    return {name: float((run(probes) * expected).sum(axis=1).min()) for name, run in candidates.items()}


def measure(
    candidates: Mapping[str, Run],
    work: Mapping[str, Sequence[list[str]]],
    *,
    rounds: int,
    clock: Clock = perf_counter,
) -> dict[str, dict[str, list[float]]]:
    """Seconds per text of every candidate on every shape, one figure per round.

    Each round runs every shape's calls through every candidate, the candidates in an order
    that rotates from round to round; one warm-up call per candidate and shape comes first.
    """
    names = list(candidates)
    samples: dict[str, dict[str, list[float]]] = {shape: {n: [] for n in names} for shape in work}
    for calls in work.values():
        for name in names:
            candidates[name](list(calls[0]))
    for index in range(rounds):
        order = names[index % len(names) :] + names[: index % len(names)]
        for shape, calls in work.items():
            texts = sum(len(c) for c in calls)
            for name in order:
                start = clock()
                for call in calls:
                    candidates[name](list(call))
                samples[shape][name].append((clock() - start) / texts)
    return samples


def choose(samples: Mapping[str, Sequence[float]], *, reference: str = REFERENCE, margin: float = MARGIN) -> str:
    """The candidate to use for one shape: the reference unless another is clearly faster.

    Clearly faster: at most ``margin`` of the reference's median *and* of its best round.
    Among those, the lowest median wins.
    """
    if reference not in samples or not samples[reference]:
        return min(samples, key=lambda n: statistics.median(samples[n]))
    base_median, base_best = statistics.median(samples[reference]), min(samples[reference])
    best, best_median = reference, base_median
    for name, seconds in samples.items():
        if name == reference or not seconds:
            continue
        median = statistics.median(seconds)
        if median <= margin * base_median and min(seconds) <= margin * base_best and median < best_median:
            best, best_median = name, median
    return best


@dataclass(frozen=True)
class BackendChoice:
    """The backend of each shape, and what it was chosen from.

    Attributes:
        backends: ``{"query": name, "batch": name, "catalog": name}``.
        timings_ms: median milliseconds per text, by shape then candidate (empty when forced).
        agreement: each candidate's worst cosine to fp32 on the probes.
        rejected: candidates left out, with why.
    """

    backends: dict[str, str]
    timings_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    agreement: dict[str, float] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)

    @classmethod
    def forced(cls, name: str) -> BackendChoice:
        """The same backend for every shape, unmeasured."""
        return cls(dict.fromkeys(SHAPES, name))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BackendChoice:
        backends = {str(k): str(v) for k, v in data["backends"].items()}
        if set(backends) != set(SHAPES):
            raise ValueError(f"a backend choice names the shapes {sorted(SHAPES)}, not {sorted(backends)}")
        return cls(
            backends,
            {str(s): {str(n): float(v) for n, v in t.items()} for s, t in data.get("timings_ms", {}).items()},
            {str(n): float(v) for n, v in data.get("agreement", {}).items()},
            {str(n): str(v) for n, v in data.get("rejected", {}).items()},
        )

    def table(self) -> list[str]:
        """Lines for a terminal: per shape, each candidate's median ms per text, the chosen one marked."""
        lines = []
        for shape in SHAPES:
            timings = self.timings_ms.get(shape, {})
            cells = [f"{n} {ms:.2f}{' *' if n == self.backends[shape] else ''}" for n, ms in timings.items()]
            lines.append(f"  {shape:<8} {self.backends[shape]:<12} {' | '.join(cells) if cells else '(forced)'}")
        lines.extend(f"  rejected {name}: {why}" for name, why in self.rejected.items())
        return lines


def select(
    candidates: Mapping[str, Run],
    work: Mapping[str, Sequence[list[str]]],
    *,
    rounds: int = 5,
    clock: Clock = perf_counter,
    reference: str = REFERENCE,
) -> BackendChoice:
    """Check every candidate against the reference, time those that agree, choose per shape."""
    agreement = agreeing(candidates, reference=reference)
    rejected = {
        name: f"cosine {cos:.6f} to fp32 < {AGREEMENT}"
        for name, cos in agreement.items()
        if cos < AGREEMENT and name != reference
    }
    kept = {name: run for name, run in candidates.items() if name not in rejected}
    samples = measure(kept, work, rounds=rounds, clock=clock)
    backends = {shape: choose(samples[shape], reference=reference) for shape in samples}
    timings = {
        shape: {name: round(statistics.median(s) * 1000, 4) for name, s in by_name.items()}
        for shape, by_name in samples.items()
    }
    return BackendChoice(backends, timings, {n: round(c, 7) for n, c in agreement.items()}, rejected)


def cpu_flags(cpuinfo: str) -> set[str]:
    """The feature flags of the first CPU listed in ``/proc/cpuinfo`` text."""
    for line in cpuinfo.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_supports_bf16(flags: set[str]) -> bool:
    """Whether the CPU computes bf16 natively (AMX or AVX-512 BF16); elsewhere bf16 is emulated and slow."""
    return bool(flags & {"amx_bf16", "avx512_bf16"})


def cpuinfo() -> str:
    """The text of ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        return Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def cpu_fingerprint(*, threads: int, text: str | None = None) -> dict[str, Any]:
    """What a measured choice depends on besides the model: CPU model and flags, threads, library versions."""
    from importlib.metadata import PackageNotFoundError, version

    text = cpuinfo() if text is None else text
    names = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")]
    versions = {}
    for package in ("torch", "onnxruntime", "sentence-transformers", "transformers"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = "absent"
    return {
        "cpu": names[0] if names else platform.processor() or platform.machine(),
        "flags": hashlib.sha256(" ".join(sorted(cpu_flags(text))).encode()).hexdigest()[:16],
        "threads": threads,
        "versions": versions,
        "runs": RUNS,
    }


def cache_key(model_key: str, fingerprint: Mapping[str, Any]) -> str:
    """A file-name-safe key of a model and a machine fingerprint."""
    digest = hashlib.sha256(model_key.encode())
    digest.update(json.dumps(fingerprint, sort_keys=True).encode())
    return digest.hexdigest()[:16]


def load_choice(path: Path, fingerprint: Mapping[str, Any]) -> BackendChoice | None:
    """The choice cached at ``path`` if it was measured on this fingerprint, else None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("fingerprint") != json.loads(json.dumps(fingerprint)):
            return None
        return BackendChoice.from_json(data["choice"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_choice(path: Path, choice: BackendChoice, fingerprint: Mapping[str, Any]) -> None:
    """Cache ``choice`` at ``path`` (atomically: a concurrent start reads the old file or the new)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"fingerprint": fingerprint, "choice": choice.to_json()}, indent=1), encoding="utf-8")
    os.replace(tmp, path)
