"""The performance benchmark's figures, and the one table that shows them beside their floors and targets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.perf_ceiling import REFERENCE, Concurrent
from benchmarks.perf_inproc import PARTS, Reconciled
from benchmarks.perf_load import Latency
from benchmarks.perf_store import BuildInfo

__all__ = ["CLIENTS", "SizeResult", "apply_table", "table"]

CLIENTS = (1, 4, 16, 64)
GB = 1024**3
MB = 1024**2


@dataclass
class SizeResult:
    """Every figure measured for one catalog size."""

    size: int
    build: BuildInfo
    from_cache: bool
    load_floor: float = 0.0
    ready_catalog: float = 0.0
    ready_bare: float = 0.0
    ready_restart: float = 0.0
    index_seconds: float | None = None
    latency: Latency | None = None
    throughput: dict[int, tuple[int, float]] = field(default_factory=dict)
    ceiling: dict[int, float] = field(default_factory=dict)
    parallel: float = 0.0
    concurrent: Concurrent | None = None
    put_changed: list[float] = field(default_factory=list)
    reconciled: Reconciled | None = None
    rss_ready: int = 0
    rss_bare: int = 0
    rss_serving: int = 0
    rss_high_water: int = 0
    rss_start: int = 0
    rss_clients: int = 0
    rss_put: int = 0

    def rate(self, clients: int) -> float:
        """Requests answered per second with ``clients`` concurrent clients."""
        done, seconds = self.throughput.get(clients, (0, 0.0))
        return done / seconds if seconds else 0.0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def _s(seconds: float) -> str:
    return f"{seconds:,.2f} s" if seconds < 100 else f"{seconds:,.0f} s"


def _row(measure: str, size: int, value: str, floor: str, ratio: float | None, target: str, met: bool | None) -> str:
    shown = "" if ratio is None else f"{ratio:,.2f}x"
    verdict = "" if met is None else ("yes" if met else "**no**")
    return f"| {measure} | {size:,} | {value} | {floor} | {shown} | {target} | {verdict} |"


def _route_target(size: int) -> float | None:
    """The issue's bound on route p50 / bare encode: 1.3x at 10k functions, 1.5x at 100k."""
    return 1.5 if size >= 100_000 else 1.3 if size >= 10_000 else None


def _change_target(size: int) -> float | None:
    """The issue's bound on one changed function, in seconds: 0.3 at 10k, 1 at 100k."""
    return 1.0 if size >= 100_000 else 0.3 if size >= 10_000 else None


def _at_most(bound: float | None, value: float, unit: str) -> tuple[str, bool | None]:
    if bound is None:
        return "", None
    return f"≤ {bound:g}{unit}", value <= bound


def _latency_rows(r: SizeResult) -> list[str]:
    lat = r.latency
    if lat is None or not lat.route:
        return []
    p50, e50 = lat.quantile(lat.route, 0.5), lat.quantile(lat.encode, 0.5)
    p95, e95 = lat.quantile(lat.route, 0.95), lat.quantile(lat.encode, 0.95)
    floor50 = f"{_ms(e50)} bare encode (pair median {lat.pair_ratio:.2f}x)"
    return [
        _row(f"route p50, sequential ({len(lat.route)} distinct)", r.size, _ms(p50), floor50, p50 / e50,
             *_at_most(_route_target(r.size), p50 / e50, "x")),
        _row("route p95, sequential", r.size, _ms(p95), f"{_ms(e95)} bare encode", p95 / e95, "", None),
        *_cached_rows(r.size, lat),
    ]  # fmt: skip


def _cached_rows(size: int, lat: Latency) -> list[str]:
    """The same routes again with their query vectors cached: what a route spends beside its encode."""
    if not lat.cached or not lat.cached_httpx:
        return []
    lean, through = lat.quantile(lat.cached, 0.5), lat.quantile(lat.cached_httpx, 0.5)
    return [
        _row("route p50, query vector cached", size, _ms(lean), "", None, "", None),
        _row("route p50, query vector cached, httpx client", size, _ms(through), f"{_ms(lean)} lean client",
             through / lean, "", None),
    ]  # fmt: skip


def _throughput_rows(r: SizeResult) -> list[str]:
    rows = []
    base = r.rate(1)
    for clients in CLIENTS:
        done, seconds = r.throughput.get(clients, (0, 0.0))
        if not seconds:
            continue
        value = f"{r.rate(clients):,.1f} req/s ({done} in {_s(seconds)})"
        if clients == 1:
            rows.append(_row("throughput, 1 client (sequential)", r.size, value, "", None, "", None))
            continue
        target, met = ("≥ 2x", r.rate(clients) / base >= 2) if clients == 16 else ("", None)
        floor = f"{base:,.1f} req/s sequential"
        rows.append(_row(f"throughput, {clients} clients", r.size, value, floor, r.rate(clients) / base, target, met))
    for batch, gain in sorted(r.ceiling.items()):
        measure = f"bare encode, batches of {batch} vs one by one"
        rows.append(_row(measure, r.size, f"{gain:,.2f}x faster", "one text per call", gain, "(ceiling)", None))
    if r.parallel:
        measure, floor = "bare encode, 2 threads of 1 intra-op thread each", "1 thread of the default intra-op threads"
        rows.append(_row(measure, r.size, f"{r.parallel:,.2f}x faster", floor, r.parallel, "(ceiling)", None))
    if r.concurrent is not None:
        c = r.concurrent
        measure = "bare encode, 16 arriving at once vs one at a time, each at its fastest"
        each = "; ".join(f"{way} {gain:,.2f}x" for way, gain in c.ways.items() if way != REFERENCE)
        value = f"{c.gain:,.2f}x faster ({c.together}; against {REFERENCE}: {each})"
        floor = f"one text per call ({c.alone})"
        rows.append(_row(measure, r.size, value, floor, c.gain, "(ceiling of 16 clients)", None))
    return rows


def _sync_rows(r: SizeResult) -> list[str]:
    b = r.build
    source = f"cached build of {b.built_at}" if r.from_cache else "this run"
    value = f"{b.rate:,.1f} fn/s ({_s(b.seconds)}; {source})"
    sample = "" if b.floor_texts >= b.functions else f", {b.floor_texts:,} texts by length"
    floor = f"{b.floor_rate:,.1f} fn/s bare batch encode{sample}"
    ratio = b.rate / b.floor_rate
    rows = [_row("full sync, PUT", r.size, value, floor, ratio, "≥ 0.9x", ratio >= 0.9)]
    rec = r.reconciled
    text_floor = f"{_ms(rec.text_seconds)} bare encode of 1 text" if rec else ""
    if r.put_changed:
        put = sorted(r.put_changed)[len(r.put_changed) // 2]
        ratio_put = put / rec.text_seconds if rec else None
        rows.append(_row("1 changed, PUT full catalog", r.size, _s(put), text_floor, ratio_put,
                         *_at_most(_change_target(r.size), put, " s")))  # fmt: skip
        # The server's start synced its catalog directory, which rewrote the namespace from the file: the first
        # PUT has no digests of the bytes last written, and decodes the whole body.
        first = r.put_changed[0]
        rows.append(_row("1 changed, first PUT after a directory write", r.size, _s(first), text_floor,
                         first / rec.text_seconds if rec else None, "", None))  # fmt: skip
    if rec is not None:
        alone, noop = rec.changed.seconds, rec.noop.seconds
        rows.append(_row("1 changed, reconcile alone (apply)", r.size, _s(alone), text_floor,
                         alone / rec.text_seconds, *_at_most(_change_target(r.size), alone, " s")))  # fmt: skip
        rows.append(_row("no-op re-apply (apply)", r.size, _s(noop), "", None, "", None))
    return rows


def _process_rows(r: SizeResult) -> list[str]:
    load = f"{_s(r.load_floor)} spawn + import + load the bare library and model"
    rows = [
        _row("start to ready, stored by the API + its catalog dir", r.size, _s(r.ready_catalog), load,
             r.ready_catalog / r.load_floor, "", None),
        *(
            [_row("search index built (background, after start)", r.size, _s(r.index_seconds), "", None, "", None)]
            if r.index_seconds is not None
            else []
        ),
        _row("start to ready, stored, no catalog dir", r.size, _s(r.ready_bare), load, r.ready_bare / r.load_floor,
             "", None),
        _row("restart to ready, catalog dir unchanged", r.size, _s(r.ready_restart), load,
             r.ready_restart / r.load_floor, "≤ 15 s", r.ready_restart <= 15),
        _row("RSS after ready, stored + catalog dir", r.size, f"{r.rss_ready / MB:,.0f} MB", "", None, "", None),
        _row("RSS after ready, no catalog dir (later start)", r.size, f"{r.rss_bare / MB:,.0f} MB", "", None, "", None),
        _row("RSS, max sampled from spawn to ready, catalog dir", r.size, f"{r.rss_start / MB:,.0f} MB", "", None,
             "", None),
        _row("RSS, max sampled while 64 clients route", r.size, f"{r.rss_clients / MB:,.0f} MB", "", None,
             *(("≤ 1.2 GB", r.rss_clients <= 1.2 * GB) if r.size >= 100_000 else ("", None))),
        _row("RSS, max sampled during the one-change PUTs", r.size, f"{r.rss_put / MB:,.0f} MB", "", None, "", None),
        _row("RSS, max sampled over the whole run (start, routes, PUTs)", r.size, f"{r.rss_serving / MB:,.0f} MB", "",
             None, "", None),
        _row("RSS high-water mark (VmHWM), serving", r.size, f"{r.rss_high_water / MB:,.0f} MB", "", None, "", None),
    ]  # fmt: skip
    if r.build.peak_rss:
        rows.append(_row("RSS high-water mark, full sync", r.size, f"{r.build.peak_rss / MB:,.0f} MB", "", None, "",
                         None))  # fmt: skip
    return rows


def table(results: Sequence[SizeResult]) -> str:
    """One markdown table: measure, size, value, floor, ratio, target, met?"""
    lines = [
        "| measure | size | value | floor | ratio | target | met? |",
        "| --- | ---: | --- | --- | ---: | --- | --- |",
    ]
    for kind in (_latency_rows, _throughput_rows, _sync_rows, _process_rows):
        for r in results:
            lines += kind(r)
    return "\n".join(lines)


def apply_table(results: Sequence[SizeResult]) -> str:
    """Where the in-process applies spent their time (store and embedder methods timed in place)."""
    lines = [
        "| apply | size | total | " + " | ".join(PARTS) + " | rest | longest event-loop stall |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in PARTS) + " | ---: | ---: |",
    ]
    for r in results:
        if r.reconciled is None:
            continue
        for label, applied in (("1 changed", r.reconciled.changed), ("no-op", r.reconciled.noop)):
            parts = [applied.parts.get(p, 0.0) for p in PARTS]
            cells = " | ".join(_s(p) for p in parts)
            rest = _s(applied.seconds - sum(parts))
            lines.append(f"| {label} | {r.size:,} | {_s(applied.seconds)} | {cells} | {rest} | {_s(applied.stall)} |")
    return "\n".join(lines)
