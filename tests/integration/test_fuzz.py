"""The HTTP API fuzzed from its own OpenAPI document with schemathesis, over real HTTP.

uvicorn serves the app on 127.0.0.1 (real model, embedded storage in a temporary directory,
the example catalog, API keys). For every operation, schemathesis generates valid requests and
invalid ones (wrong types, missing fields, out-of-range values, odd path segments); every
answer must be no 5xx, a status the operation declares, of the declared content type, and match
the declared schema. Generation is derandomized, so a run is repeatable; raise ``EXAMPLES`` for
a longer search.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.errors import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from router.api.keys import AuthSettings
from router.app import create_app
from router.embedding import EmbedderPool
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration

EXAMPLES_PER_OPERATION = 30
ADMIN = "fuzz-admin-4c1e8b2a6d0f3e5a7c9b"
TRAVEL = "fuzz-travel-9a7c5e3b1d8f6a4c2e0b"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@dataclass
class Api:
    """The served app: its URL and its OpenAPI document, loaded by schemathesis."""

    url: str
    schema: Any


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> Iterator[Api]:
    root = tmp_path_factory.mktemp("fuzz")
    catalog = Path(shutil.copytree(EXAMPLES, root / "catalog"))
    with pytest.MonkeyPatch.context() as env:  # a developer's ROUTER_* variables never reach the server
        for name in [n for n in os.environ if n.startswith("ROUTER_")]:
            env.delenv(name)
        keys = AuthSettings(api_keys=json.dumps({ADMIN: "*", TRAVEL: ["travel"]}))
        app_settings = Settings(
            storage=StorageSettings(data=root / "data"), sync=SyncSettings(catalog=catalog), auth=keys
        )
    app = create_app(runtime=Runtime(app_settings, embedders=embedders))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while not _ready(url):
            assert time.monotonic() < deadline, "the app did not become ready"
            time.sleep(0.2)
        yield Api(url, schemathesis.openapi.from_url(f"{url}/openapi.json"))
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def fuzz(
    api: Api,
    mode: GenerationMode,
    *,
    key: str | None,
    examples: int = EXAMPLES_PER_OPERATION,
    refused: int | None = None,
) -> dict[str, int]:
    """Run every operation's generated cases with ``key``; returns how many cases each operation ran.

    With ``refused``, every answer under ``/v1`` must have that status.

    Raises:
        AssertionError: listing every operation whose answers broke a check, with schemathesis' report.
    """
    headers = {"authorization": f"Bearer {key}"} if key is not None else {}
    ran: dict[str, int] = {}
    failures: list[str] = []
    for result in api.schema.get_all_operations():
        operation = result.ok()
        if mode is GenerationMode.NEGATIVE and not (operation.body or any(operation.iter_parameters())):
            continue  # nothing to make invalid
        try:
            ran[operation.label] = _fuzz_one(api.url, operation, mode, headers, examples, refused)
        except (Exception, FailureGroup) as exc:  # schemathesis' report is a BaseExceptionGroup
            failures.append(f"{operation.label}:\n{exc}")
    assert not failures, "\n\n".join(failures)
    return ran


def _fuzz_one(
    url: str, operation: Any, mode: GenerationMode, headers: dict[str, str], examples: int, refused: int | None
) -> int:
    calls = 0
    protected = operation.path.startswith("/v1/")

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        nonlocal calls
        calls += 1
        response = case.call(base_url=url, headers=headers)
        case.validate_response(response, checks=CHECKS)
        if refused is not None and protected:
            assert response.status_code == refused, f"{response.status_code} {response.text}"

    run()
    return calls


def test_valid_requests_with_a_key_for_every_namespace(api: Api) -> None:
    ran = fuzz(api, GenerationMode.POSITIVE, key=ADMIN)

    assert set(ran) == {f"{op.method.upper()} {op.path}" for op in (r.ok() for r in api.schema.get_all_operations())}
    assert all(count > 0 for count in ran.values()), ran


def test_invalid_requests(api: Api) -> None:
    ran = fuzz(api, GenerationMode.NEGATIVE, key=ADMIN)

    assert {"POST /v1/route", "PUT /v1/catalogs/{namespace}", "POST /v1/sessions/{session_id}/messages"} <= set(ran)


def test_a_key_limited_to_one_namespace(api: Api) -> None:
    fuzz(api, GenerationMode.POSITIVE, key=TRAVEL, examples=15)


def test_requests_without_a_valid_key_are_refused(api: Api) -> None:
    fuzz(api, GenerationMode.POSITIVE, key=None, examples=5, refused=401)
    fuzz(api, GenerationMode.POSITIVE, key="fuzz-not-a-configured-key-000000", examples=5, refused=401)
