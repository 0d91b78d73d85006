"""A router restarted while its embedding service is down, the vectors' dimension not configured.

The dimension of a stored generation of the service's model stands in for the one the service
would answer: the router starts, says the service fails, and serves again once it is back. With
nothing stored, start-up fails saying how to start without the service. The service is the small
OpenAI-compatible server of ``tests.embedding_server`` on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from conftest import CountingEmbedder, Served

from router.embedding import Embedder, EmbedderPool, EmbeddingUnavailable, Endpoint, is_remote
from router.retrieval.catalogs import ActiveIndex
from router.server.backends import embedder_loader, embedder_pool, remote_embedder
from router.server.settings import EmbeddingSettings, MultilingualSettings
from tests.conftest import STOCKS, TIMEZONE, WEATHER, eventually, write_catalog
from tests.embedding_server import EmbeddingServer

pytestmark = pytest.mark.integration

# Quick to fail, so that an outage shows at once.
QUICK = {"RETRIES": "1", "BACKOFF": "0.05", "TIMEOUT": "2"}
PORTUGUESE = "Qual é a previsão do tempo em Lisboa amanhã"


def use_service(monkeypatch: pytest.MonkeyPatch, server: EmbeddingServer) -> None:
    """Embed with ``server``, its dimension left for the router to find out."""
    for name, value in {"URL": server.url, "MODEL": "hash-embed", **QUICK}.items():
        monkeypatch.setenv(f"ROUTER_EMBEDDING_{name}", value)


def beside(embedder: Embedder, multilingual: MultilingualSettings) -> EmbedderPool:
    """The session's default model, and the multilingual service as the runtime loads it."""
    service = embedder_loader(EmbeddingSettings(), multilingual)

    def load(model: str, dimension: int | None = None) -> Embedder:
        return service(model, dimension) if is_remote(model) else CountingEmbedder(embedder)  # type: ignore[return-value]

    return EmbedderPool(load, load_recorded=load)


@asynccontextmanager
async def started(
    serve: Callable[..., Any], pool: Callable[[], EmbedderPool] | None = None, **options: Any
) -> AsyncIterator[Served]:
    """A process of its own: a new pool loads the service, as a restarted router does."""
    loaded = pool() if pool is not None else embedder_pool(EmbeddingSettings())
    try:
        async with serve(pool=loaded, ready=False, **options) as served:
            yield served
    finally:
        loaded.close()


def route(text: str) -> dict[str, Any]:
    return {"namespace": "tools", "messages": [{"role": "user", "content": text}]}


async def test_a_restart_while_the_service_is_down_starts_and_serves_once_it_is_back(
    serve: Callable[..., Any], catalog_dir: Path, embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_service(monkeypatch, embedding_server)
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS, TIMEZONE])
    async with started(serve, catalog=catalog_dir) as served:
        await served.runtime.wait_ready()
        stored = served.runtime.service.index.generation
    assert stored.dimension == 64, "the service told the dimension"

    embedding_server.stop()
    async with started(serve, catalog=catalog_dir) as served:
        client = served.client

        async def synced() -> bool:
            return bool((await client.get("/readyz")).json()["checks"]["first_sync"])

        await eventually(synced, within=10)
        assert served.runtime.service.index.generation == stored, "the stored generation serves"
        ready = await client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["checks"] == {"storage": True, "model": True, "first_sync": True, "embedding": False}
        failure = (await client.get("/v1/status")).json()["embedding"]["failure"]
        assert embedding_server.url in failure
        assert "cannot be reached" in failure
        refused = await client.post("/v1/route", json=route("what is the weather in Oslo"))
        assert refused.status_code == 503
        assert refused.json()["error"] == "EmbeddingUnavailable"
        assert embedding_server.url in refused.json()["detail"]

        embedding_server.start()

        async def ready_again() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await eventually(ready_again, within=15)
        answered = await client.post("/v1/route", json=route("what is the weather in Oslo"))
        assert answered.status_code == 200, answered.text
        assert answered.json()["functions"][0]["name"] == "get_weather"
        assert served.runtime.service.index.generation == stored, "nothing was rebuilt"


async def test_a_first_start_while_the_service_is_down_says_how_to_start_without_it(
    serve: Callable[..., Any], catalog_dir: Path, embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_service(monkeypatch, embedding_server)
    embedding_server.stop()
    with pytest.raises(EmbeddingUnavailable) as failed:
        async with started(serve, catalog=catalog_dir):
            pass
    detail = failed.value.detail
    assert embedding_server.url in detail
    assert "cannot be reached" in detail
    assert "set ROUTER_EMBEDDING_DIMENSIONS to start without the service" in detail


def test_the_multilingual_service_names_its_own_setting(embedding_server: EmbeddingServer) -> None:
    settings = MultilingualSettings(url=embedding_server.url, model="hash-embed", retries=0)
    embedding_server.stop()
    with pytest.raises(EmbeddingUnavailable, match="set ROUTER_MULTILINGUAL_DIMENSIONS to start without"):
        remote_embedder(settings, Endpoint.parse(settings.identity))


async def test_the_multilingual_space_is_served_while_its_service_is_down_and_used_once_back(
    serve: Callable[..., Any], catalog_dir: Path, embedding_server: EmbeddingServer, embedder: Embedder
) -> None:
    multilingual = MultilingualSettings(
        url=embedding_server.url, model="hash-embed", retries=1, backoff=0.05, timeout=2
    )
    process = partial(started, serve, partial(beside, embedder, multilingual), catalog=catalog_dir)
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS, TIMEZONE])

    async def space(served: Served) -> ActiveIndex:
        async def built() -> bool:
            return served.runtime.catalogs.multilingual is not None

        await eventually(built, within=30)
        assert served.runtime.catalogs.multilingual is not None
        return served.runtime.catalogs.multilingual

    async with process(multilingual=multilingual) as served:
        stored = (await space(served)).generation
    assert stored.dimension == 64

    embedding_server.stop()
    async with process(multilingual=multilingual) as served:
        await served.runtime.wait_ready()
        down = await space(served)
        assert down.generation == stored
        assert embedding_server.url in str(getattr(down.embedder, "failure", None))
        during = await served.client.post("/v1/route", json=route(PORTUGUESE))
        assert during.status_code == 200, during.text
        metrics = (await served.client.get("/metrics")).text
        assert 'router_multilingual_fallbacks_total{reason="unavailable"} 1.0' in metrics, "routed in English"

        embedding_server.start()
        after = await served.client.post("/v1/route", json=route(PORTUGUESE))
        assert after.status_code == 200, after.text
        assert PORTUGUESE in embedding_server.texts(), "the turn was routed in the multilingual space"
