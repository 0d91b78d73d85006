"""The table of ``benchmarks.perf``: every figure of a size beside its floor, its ratio and its target."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from router.retrieval.texts import DEFAULT_TEMPLATE

CLIENTS = (1, 4, 16, 64)
MB = 1 << 20


@dataclass
class Size:
    """What one catalog size measured."""

    n: int
    embedding: dict[str, Any] = field(default_factory=dict)
    sync_seconds: float = 0.0
    sync_texts: tuple[int, int, int] = (0, 0, 0)  # texts embedded, of which functions', texts of the floor
    floor_rate: float = 0.0  # bare texts/s
    routes: list[float] = field(default_factory=list)
    encodes: list[float] = field(default_factory=list)
    throughput: dict[int, float] = field(default_factory=dict)
    gains: dict[int, float] = field(default_factory=dict)
    changed: list[float] = field(default_factory=list)
    changed_encode: float = 0.0
    rss_ready: int = 0
    rss_clients: int = 0
    examples: tuple[int, int] = (0, 0)  # runs stored, usage examples kept
    reached: int = 0  # routes after them whose question expects a function with examples
    learned_routes: list[float] = field(default_factory=list)
    learned_encodes: list[float] = field(default_factory=list)


def table(results: Sequence[Size]) -> str:
    """Every figure beside its floor, its ratio to it and its target."""
    lines = [
        "| measure | size | value | floor (same run) | ratio | target | |",
        "| --- | ---: | --- | --- | ---: | --- | --- |",
    ]

    def add(
        what: str, value: str, floor: str = "", ratio: float | None = None, want: str = "", met: bool | None = None
    ) -> None:
        verdict = "" if met is None else "met" if met else "**not met**"
        times = "" if ratio is None else f"{ratio:.2f}x"
        lines.append(f"| {what} | {r.n:,} | {value} | {floor} | {times} | {want} | {verdict} |")

    for r in results:
        big, (texts, own, sampled) = r.n >= 10_000, r.sync_texts
        rate, floor = r.n / r.sync_seconds, r.n * r.floor_rate / texts
        which = "all" if sampled == texts else f"a sample of {sampled:,} spread over their lengths"
        of = f"of its {texts:,} texts ({own:,} functions, {texts - own:,} parameter facets; {which})"
        add("full sync, PUT on an empty store", f"{rate:.1f} fn/s ({r.sync_seconds:.1f} s)",
            f"{floor:.1f} fn/s bare batch encode {of}", rate / floor, "≥ 0.9x", rate / floor >= 0.9)  # fmt: skip
        p50, encode = statistics.median(r.routes), statistics.median(r.encodes)
        add(f"route p50, sequential ({len(r.routes)} distinct)", f"{p50:.1f} ms",
            f"{encode:.1f} ms bare encode of the same text", p50 / encode, "≤ 1.5x", p50 / encode <= 1.5)  # fmt: skip
        p95, encode95 = (statistics.quantiles(x, n=20)[-1] for x in (r.routes, r.encodes))
        add("route p95, sequential", f"{p95:.1f} ms", f"{encode95:.1f} ms bare encode", p95 / encode95)
        single, gain = r.throughput[1], max(r.gains.values())
        add("throughput, 1 client (sequential)", f"{single:.1f} req/s")
        for count in CLIENTS[1:]:
            ratio = r.throughput[count] / single
            want, least = (
                (f"≥ 0.9x bare gain ({0.9 * gain:.2f}x), ≥ 1x", max(0.9 * gain, 1)) if count == 16 else ("≥ 1x", 1)
            )
            add(f"throughput, {count} clients", f"{r.throughput[count]:.1f} req/s", f"{single:.1f} req/s sequential",
                ratio, want, ratio >= least)  # fmt: skip
        for batch, value in r.gains.items():
            add(f"bare encode, batches of {batch} against one per call", f"{value:.2f}x", "the 16 clients' questions")
        change = statistics.median(r.changed)
        add(f"1 changed, PUT of the whole catalog (median of {len(r.changed)})", f"{change:.3f} s",
            f"{r.changed_encode:.1f} ms bare encode of its text", change * 1000 / r.changed_encode,
            "≤ 0.3 s" if big else "", change <= 0.3 if big else None)  # fmt: skip
        if r.learned_routes:
            p50, encode = statistics.median(r.learned_routes), statistics.median(r.learned_encodes)
            (runs, kept), routed, same = r.examples, len(r.learned_routes), "bare encode of the same text"
            add(f"route p50, sequential ({routed} more), {runs:,} runs stored ({kept:,} usage examples; "
                f"{r.reached} of the {routed} expect a function they called)", f"{p50:.1f} ms",
                f"{encode:.1f} ms {same}", p50 / encode, "≤ 1.5x", p50 / encode <= 1.5)  # fmt: skip
        add("RSS after ready (empty store)", f"{r.rss_ready / MB:,.0f} MB")
        add("RSS, most sampled while 64 clients route", f"{r.rss_clients / MB:,.0f} MB", "", None,
            "≤ 1 GB (1,024 MB)" if big else "", r.rss_clients <= 1024 * MB if big else None)  # fmt: skip
    return "\n".join(lines)


def report(results: Sequence[Size], opts: argparse.Namespace) -> str:
    """The table and what was run."""
    embedding = json.dumps(results[0].embedding) if results else "{}"
    return "\n\n".join([
        table(results),
        f"Router embedding (`GET /v1/status` \"embedding\"): `{embedding}`. Text template `{DEFAULT_TEMPLATE}`, "
        "embedded mode (Qdrant Edge), one namespace holding the catalog; one server per size, on an empty store. "
        "Client: one keep-alive HTTP/1.1 connection per client over asyncio streams (no httpx). "
        f"Sequential routes: {opts.queries} distinct BFCL questions; throughput: {opts.per_level} distinct questions "
        "per client count (none repeated within a size); bare batching gain: the best of batches of 4 and 16, on the "
        f"16 clients' questions; one change: {opts.repeats} PUTs, each changing one description; then the "
        "throughput questions whose functions the catalog holds stored as finished runs (`POST "
        "/v1/sessions/{id}/messages`, one session each, calling the functions BFCL expects, each call answered), "
        f"and {opts.queries} more distinct questions routed one at a time.",
    ])  # fmt: skip
