"""Route latency percentiles and request rates, read from the request histogram of ``Metrics``.

Percentiles are estimated from its buckets the way Prometheus's ``histogram_quantile`` does
(linear within a bucket). The recent figures are the difference between now and the newest
reading at least a minute old (or the oldest one kept), so a page that polls the status sees
about the last minute; the first reading covers the time since the process started.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.server.metrics import Metrics

ROUTE = ("POST", "/v1/route")
WINDOW_SECONDS = 60.0
QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class Reading:
    """The route histogram at one moment: cumulative bucket counts of successful routes, and all routes."""

    at: float
    buckets: tuple[tuple[float, float], ...]
    requests: float
    errors: float

    def minus(self, earlier: Reading) -> Reading:
        """What happened between ``earlier`` and this reading."""
        before = dict(earlier.buckets)
        buckets = tuple((bound, count - before.get(bound, 0.0)) for bound, count in self.buckets)
        return Reading(self.at - earlier.at, buckets, self.requests - earlier.requests, self.errors - earlier.errors)


def quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """The ``q`` quantile of a histogram given as (upper bound, cumulative count) pairs, sorted; None when empty."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank and count > below:
            if math.isinf(bound):
                return lower  # beyond the last finite bucket: its bound is all that is known
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def read(metrics: Metrics, *, now: float) -> Reading:
    """The route histogram of ``metrics`` now."""
    buckets: dict[float, float] = {}
    requests = errors = 0.0
    for family in metrics.requests.collect():
        for sample in family.samples:
            labels = sample.labels
            if (labels.get("method"), labels.get("path")) != ROUTE:
                continue
            ok = labels.get("status", "").startswith("2")
            if sample.name.endswith("_count"):
                requests += sample.value
                errors += 0.0 if ok else sample.value
            elif sample.name.endswith("_bucket") and ok:
                bound = float(labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + sample.value
    return Reading(now, tuple(sorted(buckets.items())), requests, errors)


def _figures(span: Reading) -> dict[str, Any]:
    seconds = max(span.at, 1e-9)
    figures: dict[str, Any] = {
        "seconds": round(span.at, 3),
        "requests": int(span.requests),
        "errors": int(span.errors),
        "rate_per_second": round(span.requests / seconds, 4),
    }
    for q in QUANTILES:
        value = quantile(q, span.buckets)
        figures[f"p{round(q * 100)}_ms"] = None if value is None else round(value * 1000, 2)
    return figures


@dataclass
class Traffic:
    """Readings of the route histogram kept for a minute, to tell recent rates and percentiles."""

    metrics: Metrics
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    _readings: deque[Reading] = field(init=False, default_factory=deque)

    def __post_init__(self) -> None:
        self.started = self.clock()

    def summary(self) -> dict[str, Any]:
        """Route figures over the recent window and since the process started."""
        now = self.clock()
        current = read(self.metrics, now=now)
        # The base is the newest reading at least a window old (or the oldest one, when all are younger).
        while len(self._readings) > 1 and now - self._readings[1].at >= WINDOW_SECONDS:
            self._readings.popleft()
        origin = Reading(self.started, (), 0.0, 0.0)
        base = self._readings[0] if self._readings else origin
        self._readings.append(current)
        return {
            "route": "POST /v1/route",
            "recent": _figures(current.minus(base)),
            "since_start": _figures(current.minus(origin)),
        }
