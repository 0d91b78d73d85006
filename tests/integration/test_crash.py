"""``router serve`` killed with SIGKILL in the middle of a large sync, then started again.

The restart must take the data directory over (no stale lock), resume the sync where it
stopped (only the functions not yet written are embedded), and end with exactly the
catalog: every function once, with its definition's hash, and the other namespace intact.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import STOCKS, TIMEZONE, WEATHER, large_catalog, start_router, write_catalog
from prometheus_client.parser import text_string_to_metric_families

from router.catalog.functions import parse_catalog
from router.catalog.records import MetaStore
from router.retrieval.index import FunctionStore
from router.storage.edge import EdgeStorage
from sync.reconcile import WRITE_CHUNK

pytestmark = pytest.mark.integration

SIZE = 5 * WRITE_CHUNK - 80


def metric(url: str, name: str, **labels: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


def stored(data: Path) -> dict[str, Any]:
    """What the data directory holds, read directly once no process owns it."""
    storage = EdgeStorage(data)
    try:
        meta = MetaStore.open(storage)
        generation = meta.active_generation()
        assert generation is not None
        functions = FunctionStore.open(storage, generation)
        return {
            "catalogs": {ns: (r.count, r.pinned, r.updated_at) for ns, r in meta.catalogs().items()},
            "hashes": {ns: functions.hashes(ns) for ns in ("big", "small")},
            "points": {ns: functions.count(ns) for ns in ("big", "small")},
        }
    finally:
        storage.close()


def hashes(document: Any, namespace: str) -> dict[str, str]:
    return {f.name: f.content_hash for f in parse_catalog(document, source=namespace)}


def test_a_sync_killed_midway_resumes_after_restart_and_converges(
    tmp_path: Path, catalog_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data, log = tmp_path / "data", tmp_path / "serve.log"
    small = {"functions": [WEATHER, STOCKS, TIMEZONE], "pinned": ["get_weather"]}
    big = large_catalog(SIZE)
    write_catalog(catalog_dir, "small", small)
    first = start_router("--catalog", catalog_dir, "--log-level", "info", data=data, log=log)
    try:
        first.wait_ready()
        small_before = httpx.get(f"{first.url}/v1/catalogs/small").json()
        write_catalog(catalog_dir, "big", big)
        # Kill once some chunks of the new catalog are written, and not all.
        deadline = time.monotonic() + 300
        while metric(first.url, "router_sync_functions_written_total") < 3 + WRITE_CHUNK:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        first.process.send_signal(signal.SIGKILL)
        assert first.process.wait(timeout=30) == -signal.SIGKILL
    finally:
        first.stop()

    with caplog.at_level(logging.WARNING, logger="router.storage.edge"):
        killed = stored(data)
    takeover = "data directory was not closed cleanly; taking it over"
    taken_over = [r for r in caplog.records if r.getMessage() == takeover]
    assert [getattr(r, "previous_owner", None) for r in taken_over] == [f"pid {first.process.pid}"]
    written = killed["points"]["big"]
    assert WRITE_CHUNK <= written < SIZE
    assert "big" not in killed["catalogs"]  # its record is written once the sync completes
    assert killed["hashes"]["small"] == hashes(small, "small")

    second = start_router("--catalog", catalog_dir, "--log-level", "debug", data=data, log=log)
    try:
        second.wait_ready(timeout=300)
        url = second.url
        added = metric(url, "router_sync_functions_total", source="dir", change="added")
        unchanged = metric(url, "router_sync_functions_total", source="dir", change="unchanged")
        listed = httpx.get(f"{url}/v1/catalogs/big", timeout=30).json()
        small_after = httpx.get(f"{url}/v1/catalogs/small").json()
        body = {"namespace": "big", "messages": [{"role": "user", "content": "approve the vendor lease"}]}
        routed = httpx.post(f"{url}/v1/route", json=body, headers={"X-Request-ID": "after-crash"}, timeout=30)
        small_body = {**body, "namespace": "small", "messages": [{"role": "user", "content": "weather in Oslo"}]}
        small_routed = httpx.post(f"{url}/v1/route", json=small_body, timeout=30)
    finally:
        second.stop()
    after = stored(data)

    assert (added, unchanged) == (SIZE - written, written + 3)  # resumed: only the rest was embedded
    assert listed["count"] == SIZE
    assert [f["name"] for f in listed["functions"]] == sorted(f["name"] for f in big)
    assert listed["functions"] == sorted(big, key=lambda f: f["name"])
    assert small_after == small_before
    assert after["points"] == {"big": SIZE, "small": 3}  # no duplicates
    assert after["hashes"] == {"big": hashes(big, "big"), "small": hashes(small, "small")}
    assert after["catalogs"]["small"] == killed["catalogs"]["small"]
    assert after["catalogs"]["big"][:2] == (SIZE, ())
    assert routed.status_code == 200
    assert {f["name"] for f in routed.json()["functions"]} <= {f["name"] for f in big}
    assert small_routed.status_code == 200
    assert small_routed.json()["functions"][0]["name"] == "get_weather"  # pinned
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    access = [e for e in lines if e.get("request_id") == "after-crash"]
    assert [(e["msg"], e["path"], e["status"]) for e in access] == [("request", "/v1/route", 200)]
