"""A real Qdrant server paused and resumed under a running app: 503 or fail-open, then recovery.

The whole module skips when no Docker engine answers.
"""

from __future__ import annotations

import uuid

import httpx
import pytest
from asgi_lifespan import LifespanManager
from testcontainers.community.qdrant import QdrantContainer

from router.app import create_app
from router.embedding import EmbedderPool
from router.routing.settings import RouteSettings
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings
from router.storage.client import ClientStorage
from tests.conftest import QDRANT_IMAGE, STOCKS, WEATHER
from tests.server.engine import needs_docker

pytestmark = [pytest.mark.server, needs_docker]


async def test_a_paused_server_gives_503_or_fails_open_and_everything_recovers(embedders: EmbedderPool) -> None:
    with QdrantContainer(image=QDRANT_IMAGE) as container:
        url = f"http://{container.get_container_host_ip()}:{container.exposed_rest_port}"
        storage = ClientStorage.from_url(url, prefix=f"outage_{uuid.uuid4().hex[:8]}_", timeout=2.0)
        settings = Settings(storage=StorageSettings(qdrant_url=url), route=RouteSettings(fail_open=True))
        runtime = Runtime(settings, storage=storage, embedders=embedders)
        app = create_app(runtime=runtime)
        body = {"namespace": "tools", "messages": [{"role": "user", "content": "the weather in Oslo"}]}
        try:
            async with (
                LifespanManager(app, startup_timeout=60),
                httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client,
            ):
                await runtime.wait_ready()
                catalog = {"functions": [WEATHER, STOCKS], "pinned": ["get_stock_price"]}
                assert (await client.put("/v1/catalogs/tools", json=catalog)).status_code == 200
                before = await client.post("/v1/route", json=body)
                container.get_wrapped_container().pause()
                try:
                    degraded = await client.post("/v1/route", json=body)
                    listed = await client.get("/v1/catalogs")
                finally:
                    container.get_wrapped_container().unpause()
                after = await client.post("/v1/route", json=body)
        finally:
            storage.close()

    assert before.json()["degraded"] is False
    assert degraded.status_code == 200
    assert degraded.json()["degraded"] is True
    assert [f["name"] for f in degraded.json()["functions"]] == ["get_stock_price"]
    assert listed.status_code == 503
    assert listed.json()["detail"].startswith(f"cannot reach Qdrant at {url}")
    assert after.status_code == 200
    assert after.json()["degraded"] is False
    assert [f["name"] for f in after.json()["functions"]][:2] == ["get_stock_price", "get_weather"]
