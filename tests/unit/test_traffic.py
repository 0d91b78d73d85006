"""Route percentiles and rates from the request histogram (pure arithmetic on bucket counts)."""

from __future__ import annotations

import math

import pytest

from router.server.metrics import Metrics
from router.server.traffic import Traffic, quantile

BUCKETS = [(0.01, 10.0), (0.02, 30.0), (0.05, 40.0), (math.inf, 40.0)]


def test_a_quantile_interpolates_within_its_bucket() -> None:
    assert quantile(0.25, BUCKETS) == pytest.approx(0.01)
    assert quantile(0.5, BUCKETS) == pytest.approx(0.015)
    assert quantile(0.9, BUCKETS) == pytest.approx(0.02 + 0.03 * (36 - 30) / 10)
    assert quantile(0.1, BUCKETS) == pytest.approx(0.004)


def test_a_quantile_beyond_the_last_bound_is_that_bound_and_none_without_data() -> None:
    assert quantile(0.99, [(0.01, 1.0), (math.inf, 10.0)]) == pytest.approx(0.01)
    assert quantile(0.5, [(0.01, 0.0), (math.inf, 0.0)]) is None
    assert quantile(0.5, []) is None


def test_recent_figures_cover_the_last_minute_of_readings() -> None:
    now = [100.0]
    metrics = Metrics()
    traffic = Traffic(metrics, clock=lambda: now[0])
    for _ in range(4):
        metrics.request("POST", "/v1/route", 200, 0.012)
    metrics.request("POST", "/v1/route", 422, 0.001)
    metrics.request("GET", "/v1/status", 200, 0.5)  # not a route
    now[0] = 110.0
    first = traffic.summary()
    metrics.request("POST", "/v1/route", 200, 0.3)
    now[0] = 115.0
    second = traffic.summary()
    now[0] = 200.0
    idle = traffic.summary()

    assert first["recent"] == first["since_start"]
    assert first["since_start"] == {
        "seconds": 10.0,
        "requests": 5,
        "errors": 1,
        "rate_per_second": 0.5,
        # Latency of the four answered routes only, all in the 10-15 ms bucket.
        "p50_ms": pytest.approx(12.5),
        "p90_ms": pytest.approx(14.5),
        "p99_ms": pytest.approx(14.95),
    }
    assert second["recent"]["seconds"] == 5.0
    assert second["recent"]["requests"] == 1
    assert second["recent"]["rate_per_second"] == 0.2
    assert 250 < second["recent"]["p50_ms"] <= 500
    assert second["since_start"]["requests"] == 6
    # The base is the newest reading a window old: nothing happened since.
    assert idle["recent"]["seconds"] == 85.0
    assert idle["recent"]["requests"] == 0
    assert idle["recent"]["p50_ms"] is None
    assert idle["since_start"]["requests"] == 6
