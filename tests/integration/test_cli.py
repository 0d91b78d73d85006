"""The installed ``router`` command, run as a real process.

``router sync`` reconciles once and reports per namespace; ``router serve`` answers HTTP on a
real port. Every process loads the model itself (offline), so these tests are kept few.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from conftest import (
    EXAMPLE_COUNTS,
    ROOT,
    ROUTER,
    STOCKS,
    TIMEZONE,
    WEATHER,
    RouterProcess,
    free_port,
    large_catalog,
    router_environment,
    start_router,
    write_catalog,
)

from router import cli
from router.catalog.records import MetaStore
from router.client import AuthenticationError, PermissionDeniedError, RetryPolicy, RouterClient
from router.retrieval.index import FunctionStore
from router.storage.base import StorageUnavailable
from router.storage.edge import EdgeStorage
from sync.files import source_label

pytestmark = pytest.mark.integration

SUMMARY = "added={} updated={} removed={} unchanged={}"


def router(
    *args: str | Path, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROUTER), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**router_environment(), **(env or {})},
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


def test_sync_stderr_off_a_terminal_is_one_json_object_per_line(catalog_dir: Path, tmp_path: Path) -> None:
    write_catalog(catalog_dir, "big", large_catalog(300))  # a progress bar shows from 200 functions

    result = router("sync", "--catalog", catalog_dir, "--data", tmp_path / "data", "--log-level", "info")

    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines
    assert all(isinstance(json.loads(line), dict) for line in lines), result.stderr


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


def test_sync_takes_its_directory_from_the_environment_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # ROUTER_SYNC_CATALOG was documented for both commands, but router sync required --catalog.
    monkeypatch.setenv("ROUTER_SYNC_CATALOG", str(tmp_path / "nowhere"))
    assert cli.main(["sync", "--data", str(tmp_path / "data")]) == 2
    assert f"catalog directory {tmp_path / 'nowhere'} does not exist" in capsys.readouterr().err
    monkeypatch.delenv("ROUTER_SYNC_CATALOG")
    assert cli.main(["sync", "--data", str(tmp_path / "data")]) == 2
    assert "--catalog DIR or ROUTER_SYNC_CATALOG" in capsys.readouterr().err
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


def test_serve_on_a_data_directory_in_use_says_so_in_one_line(locked: Path) -> None:
    result = router("serve", "--data", locked, "--port", "0", timeout=60)

    assert result.returncode == 3
    assert result.stderr.strip().splitlines() == [
        f"router serve: data directory {locked} is in use by pid {os.getpid()}; embedded storage allows one "
        "process per directory (use a Qdrant server URL to share storage between processes)"
    ]


def test_serve_on_a_port_in_use_says_so_before_the_model_loads(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        result = router("serve", "--data", tmp_path / "data", "--port", str(port), "--log-level", "info", timeout=60)

    assert result.returncode == 3
    # One line, and nothing of the start-up before it: the model was never loaded.
    assert result.stderr.strip().splitlines() == [
        f"router serve: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]
    assert not (tmp_path / "data").exists()


def test_serve_on_a_host_that_does_not_resolve_is_a_bad_argument(tmp_path: Path) -> None:
    result = router(
        "serve", "--data", tmp_path / "data", "--host", "no-such-host.invalid", "--allow-unauthenticated", timeout=60
    )

    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("router serve: --host no-such-host.invalid: ")


@pytest.mark.parametrize("command", ["serve", "sync", "eval", "warm", "mcp"])
def test_a_model_that_is_not_here_is_said_in_one_line(command: str, tmp_path: Path, catalog_dir: Path) -> None:
    args = {
        "serve": ["--data", tmp_path / "data", "--port", "0"],
        "sync": ["--catalog", catalog_dir, "--data", tmp_path / "data"],
        "eval": ["--catalog", catalog_dir, "--cases", tmp_path / "cases.jsonl"],
        "warm": [],
        "mcp": ["--namespace", "travel", "--data", tmp_path / "data"],
    }[command]
    (tmp_path / "cases.jsonl").write_text('{"request": "refund it", "expected": ["issue_refund"]}\n')

    result = router(command, *args, "--model", "no-such/model", timeout=60)

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"router {command}: embedding model 'no-such/model' is neither a local directory nor in the Hugging Face "
        "cache, and models are not downloaded at run time: give a model's directory, or download it first"
    ]


@pytest.mark.parametrize("command", ["serve", "sync"])
def test_a_multilingual_model_that_is_not_here_is_said_in_one_line(
    command: str, tmp_path: Path, catalog_dir: Path
) -> None:
    result = router(
        command, "--catalog", catalog_dir, "--data", tmp_path / "data", env={"ROUTER_MULTILINGUAL_MODEL": "no-such/m"}
    )

    assert result.returncode == 2
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"router {command}: ROUTER_MULTILINGUAL_MODEL: embedding model 'no-such/m' is neither a local directory"
        )
    )


def test_mcp_on_a_data_directory_in_use_points_to_the_router_holding_it(locked: Path) -> None:
    result = router("mcp", "--namespace", "travel", "--data", locked, timeout=60)

    assert result.returncode == 3
    assert f"data directory {locked} is in use by pid {os.getpid()}" in result.stderr
    assert "to search through the router that holds it, give router mcp its --url" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["serve", "sync"])
def test_a_data_directory_that_is_a_file_is_said_in_one_line(command: str, tmp_path: Path, catalog_dir: Path) -> None:
    data = tmp_path / "data"
    data.write_text("not a directory")

    result = router(command, "--catalog", catalog_dir, "--data", data, timeout=60)

    assert result.returncode == 3
    assert result.stderr.strip().splitlines() == [f"router {command}: data directory {data} is a file, not a directory"]


def test_serve_with_a_catalog_file_for_a_directory_says_so(tmp_path: Path) -> None:
    catalog = tmp_path / "travel.json"
    catalog.write_text("{}")

    result = router("serve", "--catalog", catalog, "--data", tmp_path / "data", timeout=60)

    assert result.returncode == 2
    assert result.stderr.strip() == f"router serve: catalog directory {catalog} is not a directory"


def test_a_failed_start_is_said_in_one_line_without_its_traceback(tmp_path: Path) -> None:
    service = {
        "ROUTER_EMBEDDING_URL": f"http://127.0.0.1:{free_port()}/v1",
        "ROUTER_EMBEDDING_MODEL": "text-embedding-3-small",
        "ROUTER_EMBEDDING_RETRIES": "0",
    }

    result = router("serve", "--data", tmp_path / "data", "--port", "0", timeout=60, env=service)

    assert result.returncode == 3
    assert "Traceback" not in result.stderr
    failed = [json.loads(line)["msg"] for line in result.stderr.splitlines() if "start-up failed" in line]
    assert len(failed) == 1
    assert failed[0].startswith("start-up failed: router.embedding.endpoint.EmbeddingUnavailable: embedding service")
    assert failed[0].endswith("set ROUTER_EMBEDDING_DIMENSIONS to start without the service")


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


@contextmanager
def serving(*args: str | Path, data: Path, log: Path, env: dict[str, str] | None = None) -> Iterator[RouterProcess]:
    """``router serve ARGS --data DATA`` on a free port, ready; stopped with SIGTERM at the end."""
    running = start_router(*args, data=data, log=log, env=env)
    try:
        running.wait_ready()
        yield running
    finally:
        running.stop()


@pytest.fixture
def server(examples_dir: Path, tmp_path: Path) -> Iterator[RouterProcess]:
    """``router serve`` of the example catalog on a free port, ready."""
    with serving("--catalog", examples_dir, data=tmp_path / "data", log=tmp_path / "serve.log") as running:
        yield running


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


def test_serve_without_keys_says_it_is_unauthenticated_on_loopback(server: RouterProcess) -> None:
    assert "the API is unauthenticated, bound to loopback 127.0.0.1" in server.log.read_text()


def test_serve_without_keys_refuses_a_host_beyond_loopback(tmp_path: Path) -> None:
    result = router("serve", "--host", "0.0.0.0", "--data", tmp_path / "data", timeout=60)  # noqa: S104

    assert result.returncode == 2
    assert "router serve: no API keys are configured, so the API would be open to anyone who reaches 0.0.0.0" in (
        result.stderr
    )
    assert not (tmp_path / "data").exists()


ADMIN_KEY = "cli-admin-5d3b1f9e7c5a3e1b9d7f"
TRAVEL_KEY = "cli-travel-8e6c4a2f0d8b6e4c2a0f"


def test_serve_with_keys_over_real_http(examples_dir: Path, tmp_path: Path) -> None:
    keys = {"ROUTER_API_KEYS": json.dumps({ADMIN_KEY: "*", TRAVEL_KEY: ["travel"]}), "ROUTER_LOG_LEVEL": "debug"}
    log = tmp_path / "serve.log"
    # Any interface may be used once keys are configured; the test connects through loopback.
    host = ("--host", "0.0.0.0")  # noqa: S104
    with serving("--catalog", examples_dir, *host, data=tmp_path / "data", log=log, env=keys) as running:
        with RouterClient(running.url, api_key=TRAVEL_KEY) as travel:
            routed = travel.route("travel", "Find me a flight from Lisbon to Rome")
            listed = [c.namespace for c in travel.list_catalogs()]
            with pytest.raises(PermissionDeniedError):
                travel.get_catalog("devops")
        with RouterClient(running.url, retry=RetryPolicy(attempts=1)) as anonymous:
            with pytest.raises(AuthenticationError):
                anonymous.list_catalogs()
            assert anonymous.health().status == "ok"
        oversized = b'{"namespace": "travel", "messages": [{"role": "user", "content": "' + b"x" * (2 << 20) + b'"}]}'
        streamed = httpx.post(
            f"{running.url}/v1/route",
            content=iter([oversized[i : i + 65536] for i in range(0, len(oversized), 65536)]),
            headers={"authorization": f"Bearer {ADMIN_KEY}", "content-type": "application/json"},
            timeout=30,
        )

    assert routed.names[0] == "search_flights"
    assert listed == ["travel"]
    assert streamed.status_code == 413
    assert streamed.json()["detail"] == "request body: more than 1048576 bytes (ROUTER_LIMIT_BODY_BYTES)"
    output = log.read_text()
    assert "API keys required on /v1 (2 configured, 1 for every namespace)" in output
    assert ADMIN_KEY not in output
    assert TRAVEL_KEY not in output


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


def test_sync_watch_stops_on_sigterm_in_the_middle_of_a_pass(catalog_dir: Path, tmp_path: Path) -> None:
    # Embedding a large file takes minutes: a container's grace period is seconds.
    write_catalog(catalog_dir, "big", large_catalog(3000))
    data, log = tmp_path / "data", tmp_path / "sync.log"
    argv = ["sync", "--watch", "--catalog", str(catalog_dir), "--data", str(data), "--log-level", "info"]
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(ROUTER), *argv], stdout=output, stderr=subprocess.STDOUT, text=True, env=router_environment()
        )
    try:
        deadline = time.monotonic() + 120
        while '"msg": "embedding"' not in log.read_text():
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "no embedding progress was logged"
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        assert process.wait(timeout=60) == 0, log.read_text()
        assert time.monotonic() - signalled < 10, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    again = router("sync", "--catalog", catalog_dir, "--data", data)
    assert again.returncode == 0, again.stderr
    assert {ns: n for ns, (n, _) in catalogs_in(data).items()} == {"big": 3000}


def test_ready_file_needs_watch(examples_dir: Path, tmp_path: Path) -> None:
    result = router("sync", "--ready-file", tmp_path / "r", "--catalog", examples_dir, "--data", tmp_path / "data")

    assert result.returncode == 2
    assert "--ready-file needs --watch" in result.stderr
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize(
    ("where", "problem"), [("nodir/ready", ": its directory does not exist"), ("", " is a directory")]
)
def test_a_ready_file_that_cannot_be_kept_is_said_before_anything_starts(
    examples_dir: Path, tmp_path: Path, where: str, problem: str
) -> None:
    ready = tmp_path / where
    result = router("sync", "--watch", "--ready-file", ready, "--catalog", examples_dir, "--data", tmp_path / "data")

    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"router sync: --ready-file {ready}{problem}"]
    assert not (tmp_path / "data").exists()


def test_a_catalog_that_is_a_file_is_said_so(tmp_path: Path) -> None:
    catalog = tmp_path / "travel.json"
    catalog.write_text("[]")
    for command in ("sync", "migrate"):
        flags = ["--catalog", catalog, "--data", tmp_path / "d"] if command == "sync" else ["--data", catalog]
        result = router(command, *flags, *(["--qdrant-url", "http://127.0.0.1:9"] if command == "migrate" else []))
        assert result.returncode == 2
        assert result.stderr.strip().endswith(f"{catalog} is not a directory"), result.stderr


def test_warm_loads_the_model_and_says_what_it_runs_on() -> None:
    result = subprocess.run(
        [str(ROUTER), "warm", "--log-level", "warning"],
        capture_output=True,
        text=True,
        timeout=300,
        env=router_environment(),
        check=False,
    )

    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    assert (described["model"], described["dimension"]) == ("sentence-transformers/all-MiniLM-L6-v2", 384)


@pytest.mark.parametrize("command", ["warm", "sync"])
def test_a_model_that_cannot_load_stops_the_command_in_one_line(command: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text("{}")  # a directory, but no model in it
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    extra = ["--catalog", catalog, "--data", tmp_path / "data"] if command == "sync" else []
    result = router(command, "--model", broken, *extra)

    assert result.returncode == 3, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(f"router {command}: embedding model '{broken}' cannot be")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", ["serve", "sync"])
def test_a_data_directory_that_cannot_be_written_is_said_in_one_line(
    command: str, tmp_path: Path, catalog_dir: Path
) -> None:
    data = tmp_path / "data"
    (data / ".lock").mkdir(parents=True)  # its lock file cannot be opened, as in a read-only directory

    result = router(command, "--catalog", catalog_dir, "--data", data, timeout=60)

    assert result.returncode == 3
    assert result.stderr.strip().splitlines() == [
        f"router {command}: data directory {data} cannot be written: Is a directory"
    ]


def test_eval_stopped_with_sigterm_removes_its_throwaway_store(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"request": "find flights to Rome", "expected": ["search_flights"]}\n')
    catalog = ROOT / "examples" / "catalog" / "travel.json"
    process = subprocess.Popen(
        [str(ROUTER), "eval", "--catalog", str(catalog), "--cases", str(cases)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**router_environment(), "TMPDIR": str(temp)},
    )
    try:
        deadline = time.monotonic() + 120
        while not list(temp.glob("router-eval-*")) and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert list(temp.glob("router-eval-*")), "the evaluation made no throwaway store"
        process.send_signal(signal.SIGTERM)  # how CI cancels a job
        assert process.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        process.kill()
    assert list(temp.glob("router-eval-*")) == []
