"""The installed ``router`` command, run as a real process.

``router sync`` reconciles once and reports per namespace; ``router serve`` answers HTTP on a
real port. Every process loads the model itself (offline), so these tests are kept few.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from conftest import (
    EXAMPLE_COUNTS,
    ROUTER,
    STOCKS,
    TIMEZONE,
    WEATHER,
    RouterProcess,
    router_environment,
    start_router,
    write_catalog,
)

from router.functions import FunctionStore
from router.meta import MetaStore
from router.storage.base import StorageUnavailable
from router.storage.edge import EdgeStorage
from sync.sources import source_label

pytestmark = pytest.mark.integration

SUMMARY = "added={} updated={} removed={} unchanged={}"


def router(*args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROUTER), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=router_environment(),
        check=False,
    )


def catalogs_in(data: Path) -> dict[str, tuple[int, str]]:
    """Each stored catalog's (count, source), read after the process released the directory."""
    storage = EdgeStorage(data)
    try:
        return {ns: (r.count, r.source) for ns, r in MetaStore.open(storage).catalogs().items()}
    finally:
        storage.close()


def test_the_console_script_is_installed() -> None:
    assert ROUTER.exists()
    result = router("--help", timeout=60)
    assert result.returncode == 0
    assert "serve" in result.stdout
    assert "sync" in result.stdout


def test_sync_once_reports_each_namespace_and_exits_0(examples_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"

    first = router("sync", "--catalog", examples_dir, "--data", data)
    second = router("sync", "--catalog", examples_dir, "--data", data)

    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [f"{ns}: {SUMMARY.format(n, 0, 0, 0)}" for ns, n in EXAMPLE_COUNTS.items()]
    assert second.returncode == 0, second.stderr
    assert second.stdout.splitlines() == [f"{ns}: {SUMMARY.format(0, 0, 0, n)}" for ns, n in EXAMPLE_COUNTS.items()]
    label = source_label(examples_dir)
    assert catalogs_in(data) == {ns: (n, label) for ns, n in EXAMPLE_COUNTS.items()}


def test_sync_exits_1_when_a_file_is_rejected(catalog_dir: Path, tmp_path: Path) -> None:
    write_catalog(catalog_dir, "good", [WEATHER])
    bad = write_catalog(catalog_dir, "bad", {"functions": [WEATHER, {"name": "get_time", "description": 42}]})
    (catalog_dir / "broken.yaml").write_text("functions: [unclosed\n")
    data = tmp_path / "data"

    result = router("sync", "--catalog", catalog_dir, "--data", data)

    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert f"good: {SUMMARY.format(1, 0, 0, 0)}" in lines
    assert f"bad: REJECTED {bad}: functions[1].description: must be a string, got int" in lines
    assert any(line.startswith(f"broken: REJECTED {catalog_dir / 'broken.yaml'}: cannot be parsed") for line in lines)
    assert set(catalogs_in(data)) == {"good"}


def test_sync_of_a_missing_directory_exits_2(tmp_path: Path) -> None:
    result = router("sync", "--catalog", tmp_path / "nowhere", "--data", tmp_path / "data")

    assert result.returncode == 2
    assert "does not exist" in result.stderr
    assert not (tmp_path / "data").exists()


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A data directory held open by this test process."""
    data = tmp_path / "data"
    storage = EdgeStorage(data)
    yield data
    storage.close()


def test_sync_on_a_data_directory_in_use_fails_naming_the_owner(locked: Path, catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "good", [WEATHER])

    result = router("sync", "--catalog", catalog_dir, "--data", locked)

    assert result.returncode != 0
    assert f"data directory {locked} is in use by pid {os.getpid()}" in result.stderr


def test_sync_on_a_data_directory_in_use_says_so_without_a_traceback(locked: Path, catalog_dir: Path) -> None:
    result = router("sync", "--catalog", catalog_dir, "--data", locked)

    assert result.returncode not in (0, 1)
    assert "Traceback" not in result.stderr


def test_sync_switches_the_text_template(tmp_path: Path, catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS, TIMEZONE])
    data = tmp_path / "data"
    assert router("sync", "--catalog", catalog_dir, "--data", data, "--text", "name_description").returncode == 0

    result = router("sync", "--catalog", catalog_dir, "--data", data, "--text", "name_description_parameters")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"tools: {SUMMARY.format(0, 0, 0, 3)}"]
    storage = EdgeStorage(data)
    try:
        active = MetaStore.open(storage).active_generation()
        assert active is not None
        assert active.text == "name_description_parameters"
        collections = sorted(p.name for p in data.iterdir() if p.name.startswith("functions-"))
        assert collections == [active.spec.name]
        payloads = [r.payload for r in FunctionStore.open(storage, active).collection.scroll()]
        assert sorted(p["name"] for p in payloads) == ["get_local_time", "get_stock_price", "get_weather"]
        assert {p["text_template"] for p in payloads} == {"name_description_parameters"}
    finally:
        storage.close()


@pytest.fixture
def server(examples_dir: Path, tmp_path: Path) -> Iterator[RouterProcess]:
    """``router serve`` on a free port, ready; stopped with SIGTERM at the end."""
    running = start_router("--catalog", examples_dir, data=tmp_path / "data", log=tmp_path / "serve.log")
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


def test_serve_answers_on_a_real_port(server: RouterProcess) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        ready = client.get("/readyz")
        listed = client.get("/v1/catalogs")
        routed = client.post(
            "/v1/route",
            json={
                "namespace": "travel",
                "messages": [{"role": "user", "content": "find me a flight from Lisbon to Rome"}],
            },
        )
        invalid = client.put("/v1/catalogs/tools", json={"functions": [{"name": "a b"}]})

    assert ready.json() == {"status": "ready", "checks": {"storage": True, "model": True, "first_sync": True}}
    assert {c["namespace"]: c["count"] for c in listed.json()["catalogs"]} == EXAMPLE_COUNTS
    assert routed.status_code == 200
    assert "search_flights" in [f["name"] for f in routed.json()["functions"]]
    assert invalid.status_code == 422
    assert invalid.headers["content-type"] == "application/json"
    assert set(invalid.json()) == {"error", "detail", "request_id"}
    assert invalid.json()["request_id"] == invalid.headers["x-request-id"]
    assert "functions[0].name" in invalid.json()["detail"]


def test_serve_owns_its_data_directory_until_it_stops(server: RouterProcess) -> None:
    with pytest.raises(
        StorageUnavailable, match=rf"data directory {server.data} is in use by pid {server.process.pid}"
    ):
        EdgeStorage(server.data)

    server.process.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert server.process.wait(timeout=30) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in server.log.read_text()
    assert {ns: n for ns, (n, _) in catalogs_in(data=server.data).items()} == EXAMPLE_COUNTS


def test_sync_watch_keeps_a_ready_file_and_stops_cleanly_on_sigterm(examples_dir: Path, tmp_path: Path) -> None:
    data, ready, log = tmp_path / "data", tmp_path / "sync.ready", tmp_path / "sync.log"
    ready.write_text("left by an earlier run")
    argv = ["sync", "--watch", "--ready-file", str(ready), "--catalog", str(examples_dir), "--data", str(data)]
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(ROUTER), *argv], stdout=output, stderr=subprocess.STDOUT, text=True, env=router_environment()
        )
    try:
        deadline = time.monotonic() + 120
        while not (ready.exists() and ready.read_text().startswith("{")):
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the ready file was not written"
            time.sleep(0.1)
        written = json.loads(ready.read_text())["passed_at"]

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert 0 < time.time() - written < 120
    assert not ready.exists()
    assert {ns: n for ns, (n, _) in catalogs_in(data).items()} == EXAMPLE_COUNTS


def test_ready_file_needs_watch(examples_dir: Path, tmp_path: Path) -> None:
    result = router("sync", "--ready-file", tmp_path / "r", "--catalog", examples_dir, "--data", tmp_path / "data")

    assert result.returncode == 2
    assert "--ready-file needs --watch" in result.stderr
    assert not (tmp_path / "data").exists()


def test_warm_exports_the_model_once_for_later_starts(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(ROUTER), "warm", "--log-level", "warning"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**router_environment(), "XDG_CACHE_HOME": str(tmp_path)},
        check=False,
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == "sentence-transformers/all-MiniLM-L6-v2: onnx, 384 dimensions\n"
    [verified] = (tmp_path / "tool-router").glob("*/verified.json")
    assert json.loads(verified.read_text())["cosine"] >= 0.999
