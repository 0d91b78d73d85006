"""Storage that goes away answers 503 with a clear body, and recovers when it comes back."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from asgi_lifespan import LifespanManager
from prometheus_client.parser import text_string_to_metric_families
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from router.app import create_app
from router.embedding import EmbedderPool
from router.routing.settings import RouteSettings
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from router.storage.base import Collection, CollectionSpec, Storage, StorageUnavailable
from router.storage.client import ClientStorage
from tests.conftest import EXAMPLES, STOCKS, TIMEZONE, WEATHER, Served, eventually, write_catalog
from tests.integration.test_watch import logged

pytestmark = pytest.mark.integration


class Switchable:
    """A real storage whose connection can be cut: every call raises while ``down``."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.down = False

    @property
    def location(self) -> str:
        return self.inner.location

    def _check(self) -> None:
        if self.down:
            raise StorageUnavailable(f"cannot reach Qdrant at {self.location}: connection refused")

    def collection(self, spec: CollectionSpec) -> Collection:
        self._check()
        return _Guarded(self.inner.collection(spec), self)

    def exists(self, name: str) -> bool:
        self._check()
        return self.inner.exists(name)

    def drop(self, name: str) -> None:
        self._check()
        self.inner.drop(name)

    def close(self) -> None:
        self.inner.close()


class _Guarded:
    def __init__(self, inner: Collection, owner: Switchable) -> None:
        self._inner = inner
        self._owner = owner

    def __getattr__(self, name: str) -> Callable[..., Any]:
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self._owner._check()
            return attribute(*args, **kwargs)

        return call


async def test_storage_down_answers_503_and_recovers(tmp_path: Path, embedders: EmbedderPool) -> None:
    storage = Switchable(ClientStorage.in_memory())
    settings = Settings(storage=StorageSettings(data=tmp_path / "unused"), sync=SyncSettings(catalog=EXAMPLES))
    runtime = Runtime(settings, storage=storage, embedders=embedders)
    app = create_app(runtime=runtime)
    body = {"namespace": "travel", "messages": [{"role": "user", "content": "flights to Rome"}]}
    async with (
        LifespanManager(app, startup_timeout=60),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client,
    ):
        await runtime.wait_ready()
        assert (await client.post("/v1/route", json=body)).status_code == 200
        storage.down = True
        for response in [
            await client.post("/v1/route", json=body),
            await client.get("/v1/catalogs"),
            await client.post("/v1/sessions/s/messages", json={"messages": [{"role": "user", "content": "hi"}]}),
        ]:
            assert response.status_code == 503
            assert response.json()["error"] == "Unavailable"
            assert "cannot reach Qdrant" in response.json()["detail"]
        storage.down = False
        assert (await client.post("/v1/route", json=body)).status_code == 200


async def test_a_sync_pass_that_failed_is_retried_once_storage_is_back(
    tmp_path: Path, embedders: EmbedderPool, catalog_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    storage = Switchable(ClientStorage.in_memory())
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    settings = Settings(
        storage=StorageSettings(data=tmp_path / "unused"), sync=SyncSettings(catalog=catalog_dir, retry_seconds=0.2)
    )
    runtime = Runtime(settings, storage=storage, embedders=embedders)
    await runtime.start()
    try:
        # The worker's first pass has not run yet (nothing awaited since it was spawned): it meets storage down.
        storage.down = True
        await logged(caplog, "catalog sync pass failed; will retry")
        assert not runtime.readiness()["first_sync"]

        storage.down = False

        # Nothing in the directory changes again: the worker retries on its own.
        async with asyncio.timeout(10):
            await runtime.wait_ready()
        assert set(await runtime.service.catalogs.records()) == {"tools"}
    finally:
        await runtime.stop()


class FlakyQdrant:
    """A real ``qdrant-client`` (local in-memory mode) whose server can go away and come back.

    While ``down``, every call raises what ``qdrant-client`` raises when nothing listens at
    the server's URL; while ``broken``, what it raises when the server refuses a request it should take (400).
    """

    def __init__(self) -> None:
        self.inner = QdrantClient(":memory:")
        self.down = False
        self.broken = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise ResponseHandlingException(httpx.ConnectError("[Errno 111] Connection refused"))
            if self.broken:
                raise UnexpectedResponse(400, "Bad Request", b"{}", httpx.Headers())
            return attribute(*args, **kwargs)

        return call


URL = "http://qdrant.test:6333"


@asynccontextmanager
async def server_mode(
    qdrant: FlakyQdrant, pool: EmbedderPool, *, catalog: Path | None = None, fail_open: bool = False
) -> AsyncIterator[Served]:
    """An app in server mode whose Qdrant server is ``qdrant``."""
    settings = Settings(
        storage=StorageSettings(qdrant_url=URL),
        sync=SyncSettings(catalog=catalog),
        route=RouteSettings(fail_open=fail_open),
    )
    storage = ClientStorage(cast(QdrantClient, qdrant), location=URL)
    runtime = Runtime(settings, storage=storage, embedders=pool)
    app = create_app(runtime=runtime)
    async with (
        LifespanManager(app, startup_timeout=60),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client,
    ):
        async with asyncio.timeout(60):
            await runtime.wait_ready()
        yield Served(app, runtime, client, Path("unused"))


async def metric(client: httpx.AsyncClient, name: str, **labels: str) -> float:
    text = (await client.get("/metrics")).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == labels:
                return float(sample.value)
    return 0.0


def route(namespace: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"namespace": namespace, "messages": [{"role": "user", "content": text}], **extra}


async def test_a_server_that_goes_away_gives_503_naming_it_and_everything_recovers_without_restart(
    examples_dir: Path, embedders: EmbedderPool
) -> None:
    qdrant = FlakyQdrant()
    async with server_mode(qdrant, embedders, catalog=examples_dir) as served:
        client = served.client
        assert (await client.post("/v1/route", json=route("travel", "flights to Rome"))).status_code == 200

        qdrant.down = True
        failed = [
            await client.post("/v1/route", json=route("travel", "flights to Rome")),
            await client.get("/v1/catalogs"),
            await client.put("/v1/catalogs/extra", json={"functions": [WEATHER]}),
            await client.post("/v1/sessions/s/messages", json={"messages": [{"role": "user", "content": "hi"}]}),
        ]
        # A file edited during the outage: its pass fails, and is tried again once storage is back.
        write_catalog(examples_dir, "weather", [WEATHER, STOCKS])

        async def pass_failed() -> bool:
            return await metric(client, "router_sync_applies_total", source="dir", outcome="failed") >= 1

        await eventually(pass_failed, within=30, step=0.1)
        down_scrape = await client.get("/metrics")

        qdrant.down = False
        back = await client.post("/v1/route", json=route("travel", "flights to Rome"))

        async def synced() -> bool:
            return (await client.get("/v1/catalogs/weather")).status_code == 200

        retried_within = await eventually(synced, within=30, step=0.1)
        weather = (await client.get("/v1/catalogs/weather")).json()
        errors = await metric(client, "router_errors_total", status="503", error="Unavailable")

    for response in failed:
        assert response.status_code == 503
        body = response.json()
        assert body["error"] == "Unavailable"
        assert body["detail"] == f"cannot reach Qdrant at {URL}: [Errno 111] Connection refused"
        assert body["request_id"] == response.headers["x-request-id"]
    assert down_scrape.status_code == 200
    assert "router_storage_up 0.0" in down_scrape.text
    assert back.status_code == 200
    assert sorted(f["name"] for f in weather["functions"]) == ["get_stock_price", "get_weather"]
    assert retried_within < 15  # no file changed after the outage: the worker retried by itself
    assert errors == len(failed)


async def test_routes_fail_open_to_the_pinned_functions_while_storage_is_down(embedders: EmbedderPool) -> None:
    qdrant = FlakyQdrant()
    catalog = {"functions": [WEATHER, STOCKS, TIMEZONE], "pinned": ["get_local_time"]}
    async with server_mode(qdrant, embedders, fail_open=True) as served:
        client = served.client
        assert (await client.put("/v1/catalogs/tools", json=catalog)).status_code == 200
        assert (await client.put("/v1/catalogs/plain", json={"functions": [WEATHER]})).status_code == 200
        # A request pin seen once is known from then on.
        pinned = await client.post("/v1/route", json=route("tools", "the weather in Oslo", pinned=["get_stock_price"]))
        assert pinned.status_code == 200

        qdrant.down = True
        both = await client.post("/v1/route", json=route("tools", "the weather in Oslo", pinned=["get_stock_price"]))
        catalog_only = await client.post("/v1/route", json=route("tools", "the weather in Oslo", session_id="s"))
        unknown_pin = await client.post("/v1/route", json=route("tools", "the weather", pinned=["get_weather"]))
        no_pins = await client.post("/v1/route", json=route("plain", "the weather in Oslo"))
        unknown = await client.post("/v1/route", json=route("nowhere", "the weather in Oslo"))
        invalid = await client.post("/v1/route", json={"namespace": "tools", "messages": [{"role": "user"}]})
        stored = await client.post("/v1/sessions/s/messages", json={"messages": [{"role": "user", "content": "hi"}]})
        degraded = await metric(client, "router_route_degraded_total")

        qdrant.down = False
        healthy = await client.post("/v1/route", json=route("tools", "the weather in Oslo"))

    assert both.status_code == 200
    answer = both.json()
    assert answer["degraded"] is True
    assert [(f["name"], f["pinned"], f["score"]) for f in answer["functions"]] == [
        ("get_local_time", True, 0.0),
        ("get_stock_price", True, 0.0),
    ]
    assert answer["tools"] == [{"type": "function", "function": TIMEZONE}, {"type": "function", "function": STOCKS}]
    assert (answer["history"], answer["memories"], answer["context"]) == ([], [], "the weather in Oslo")
    assert [f["name"] for f in catalog_only.json()["functions"]] == ["get_local_time"]
    assert [f["name"] for f in unknown_pin.json()["functions"]] == ["get_local_time"]
    assert (no_pins.status_code, no_pins.json()["functions"], no_pins.json()["degraded"]) == (200, [], True)
    assert unknown.status_code == 503  # whether that namespace exists cannot be told without storage
    assert invalid.status_code == 422
    assert stored.status_code == 503  # writes never fail open
    assert degraded == 4
    assert healthy.json()["degraded"] is False
    assert [f["name"] for f in healthy.json()["functions"] if f["pinned"]] == ["get_local_time"]


async def test_the_pins_are_known_from_start_and_follow_catalog_writes(embedders: EmbedderPool) -> None:
    qdrant = FlakyQdrant()
    async with server_mode(qdrant, embedders) as first:
        catalog = {"functions": [WEATHER, STOCKS, TIMEZONE], "pinned": ["get_local_time", "get_weather"]}
        assert (await first.client.put("/v1/catalogs/tools", json=catalog)).status_code == 200

    async with server_mode(qdrant, embedders, fail_open=True) as second:
        client = second.client
        qdrant.down = True
        at_start = await client.post("/v1/route", json=route("tools", "what time is it"))
        qdrant.down = False
        # The catalog drops one pinned function and unpins the other.
        assert (await client.put("/v1/catalogs/tools", json={"functions": [STOCKS, TIMEZONE]})).status_code == 200
        qdrant.down = True
        after_write = await client.post("/v1/route", json=route("tools", "what time is it", pinned=["get_weather"]))
        qdrant.down = False
        assert (await client.delete("/v1/catalogs/tools")).status_code == 200
        qdrant.down = True
        after_delete = await client.post("/v1/route", json=route("tools", "what time is it"))
        qdrant.down = False

    assert [f["name"] for f in at_start.json()["functions"]] == ["get_local_time", "get_weather"]
    assert after_write.json()["functions"] == []
    assert after_write.json()["degraded"] is True
    assert after_delete.status_code == 503


async def test_an_unexpected_storage_error_is_a_json_500_with_the_request_id(embedders: EmbedderPool) -> None:
    qdrant = FlakyQdrant()
    async with server_mode(qdrant, embedders) as served:
        assert (await served.client.put("/v1/catalogs/tools", json={"functions": [WEATHER]})).status_code == 200
        qdrant.broken = True
        failed = await served.client.post("/v1/route", json=route("tools", "weather"), headers={"X-Request-ID": "r-1"})
        qdrant.broken = False
        counted = await metric(served.client, "router_errors_total", status="500", error="InternalError")

    assert failed.status_code == 500
    assert failed.json() == {"error": "InternalError", "detail": "UnexpectedResponse", "request_id": "r-1"}
    assert failed.headers["x-request-id"] == "r-1"
    assert counted == 1
