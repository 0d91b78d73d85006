"""``/metrics`` in the Prometheus text format, request ids in headers, error bodies and logs."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_COUNTS, EXAMPLES, STOCKS, WEATHER
from prometheus_client.parser import text_string_to_metric_families

from router.embedding import EmbedderPool
from router.server import logs

pytestmark = pytest.mark.integration

FLIGHT = {"namespace": "travel", "messages": [{"role": "user", "content": "find me a flight from Lisbon to Rome"}]}


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of an exposition, by name and labels."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


async def test_metrics_count_requests_encodes_syncs_catalogs_and_errors(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        # Texts no other test routes: the shared model caches query vectors.
        for text in ["metrics: a flight to Oslo", "metrics: a hotel in Porto", "metrics: the weather in Bergen"]:
            body = {**FLIGHT, "messages": [{"role": "user", "content": text}]}
            assert (await client.post("/v1/route", json=body)).status_code == 200
        nowhere = {"namespace": "nowhere", "messages": [{"role": "user", "content": "metrics: a train to Bergen"}]}
        assert (await client.post("/v1/route", json=nowhere)).status_code == 404
        assert (await client.post("/v1/route", json={**FLIGHT, "messages": []})).status_code == 422
        assert (await client.put("/v1/catalogs/extra", json={"functions": [WEATHER, STOCKS]})).status_code == 200
        answer = await client.get("/metrics")

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    found = samples(answer.text)
    route = {"method": "POST", "path": "/v1/route"}
    assert value(found, "router_http_request_duration_seconds_count", **route, status="200") == 3
    assert value(found, "router_http_request_duration_seconds_count", **route, status="404") == 1
    assert value(found, "router_http_request_duration_seconds_count", **route, status="422") == 1
    put = {"method": "PUT", "path": "/v1/catalogs/{namespace}", "status": "200"}
    assert value(found, "router_http_request_duration_seconds_count", **put) == 1
    # Latency buckets are cumulative and end with every request.
    assert value(found, "router_http_request_duration_seconds_bucket", **route, status="200", le="+Inf") == 3
    assert value(found, "router_errors_total", status="404", error="NamespaceNotFound") == 1
    assert value(found, "router_errors_total", status="422", error="ValidationError") == 1
    assert value(found, "router_encode_duration_seconds_count", kind="query") >= 1
    # One new text per route; the unknown namespace's too (a turn without a session is embedded first).
    assert value(found, "router_encode_batch_size_sum", kind="query") == 4
    assert value(found, "router_encode_batch_size_sum", kind="catalog") == sum(EXAMPLE_COUNTS.values()) + 2
    assert value(found, "router_sync_applies_total", source="dir", outcome="changed") == len(EXAMPLE_COUNTS)
    assert value(found, "router_sync_applies_total", source="api", outcome="changed") == 1
    assert value(found, "router_sync_functions_total", source="dir", change="added") == sum(EXAMPLE_COUNTS.values())
    assert value(found, "router_sync_functions_total", source="api", change="added") == 2
    assert value(found, "router_sync_functions_written_total") == sum(EXAMPLE_COUNTS.values()) + 2
    sizes = {dict(labels)["namespace"]: v for (name, labels), v in found.items() if name == "router_catalog_functions"}
    assert sizes == {**EXAMPLE_COUNTS, "extra": 2}
    assert value(found, "router_storage_up") == 1
    assert value(found, "process_resident_memory_bytes") > 0


async def test_each_app_counts_only_its_own_requests(
    serve: Callable[..., Any], tmp_path: Path, embedders: EmbedderPool
) -> None:
    async with serve(catalog=EXAMPLES) as first, serve(data=tmp_path / "other", catalog=EXAMPLES) as second:
        await first.client.post("/v1/route", json=FLIGHT)
        await first.client.post("/v1/route", json=FLIGHT)
        await second.client.post("/v1/route", json=FLIGHT)
        one = samples((await first.client.get("/metrics")).text)
        two = samples((await second.client.get("/metrics")).text)

    route = {"method": "POST", "path": "/v1/route", "status": "200"}
    assert value(one, "router_http_request_duration_seconds_count", **route) == 2
    assert value(two, "router_http_request_duration_seconds_count", **route) == 1
    assert embedders.observers == []  # a stopped app no longer observes the shared models


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("req-42.a:b/c+d=e@f", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("two words", False),
        ("caf\u00e9", False),
        ("", False),
        (None, False),
    ],
)
async def test_request_ids_are_echoed_when_safe_and_made_otherwise(
    serve: Callable[..., Any], sent: str | None, kept: bool
) -> None:
    headers = {} if sent is None else {"X-Request-ID": sent.encode()}
    async with serve(catalog=EXAMPLES) as served:
        ok = await served.client.post("/v1/route", json=FLIGHT, headers=headers)
        failed = await served.client.post("/v1/route", json={**FLIGHT, "namespace": "nowhere"}, headers=headers)

    for response in (ok, failed):
        echoed = response.headers["x-request-id"]
        if kept:
            assert echoed == sent
        else:
            assert re.fullmatch(r"[0-9a-f]{32}", echoed)
    if not kept:
        assert ok.headers["x-request-id"] != failed.headers["x-request-id"]
    assert failed.json()["request_id"] == failed.headers["x-request-id"]


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """The router's JSON log lines at debug level, as ``router serve`` writes them."""
    stream = io.StringIO()
    handler = logs.handler("json", stream)
    loggers = [logging.getLogger("router"), logging.getLogger("sync")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)


async def test_log_lines_of_a_request_carry_its_id(serve: Callable[..., Any], log_lines: io.StringIO) -> None:
    async with serve(catalog=EXAMPLES) as served:
        await served.client.post("/v1/route", json=FLIGHT, headers={"X-Request-ID": "turn-7"})
        await served.client.get("/v1/catalogs/nowhere", headers={"X-Request-ID": "lookup-8"})

    entries = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    access = {e["request_id"]: e for e in entries if e["logger"] == "router.access"}
    assert access["turn-7"]["msg"] == "request"
    assert access["turn-7"]["path"] == "/v1/route"
    assert access["turn-7"]["status"] == 200
    assert access["turn-7"]["ms"] > 0
    assert access["lookup-8"]["status"] == 404
    # Lines logged outside any request (the catalog worker's) carry no id.
    reconciled = [e for e in entries if e["msg"] == "catalog reconciled"]
    assert len(reconciled) == len(EXAMPLE_COUNTS)
    assert all("request_id" not in e for e in reconciled)


async def test_access_log_is_off_at_the_default_level(serve: Callable[..., Any], log_lines: io.StringIO) -> None:
    logging.getLogger("router").setLevel(logging.INFO)
    async with serve(catalog=EXAMPLES) as served:
        await served.client.post("/v1/route", json=FLIGHT)

    entries = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    assert [e for e in entries if e["logger"] == "router.access"] == []
