"""The router on an embedding service: a model switch re-embeds everything, and an outage loses nothing.

The service is the small OpenAI-compatible server of ``tests.embedding_server`` on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CountingEmbedder, Served

from router.embedding import DEFAULT_MODEL, Embedder, EmbedderPool, Endpoint, is_remote
from router.server.backends import remote_embedder
from router.server.embedding_settings import EmbeddingSettings
from router.sessions.records import memory_spec
from tests.conftest import STOCKS, TIMEZONE, WEATHER, eventually, write_catalog
from tests.embedding_server import EmbeddingServer, Fault

pytestmark = pytest.mark.integration

ASKED = "give the crew a heads-up about the weather in Oslo"


@pytest.fixture
def pool(embedder: Embedder) -> Iterator[EmbedderPool]:
    """The session's local model (kept loaded when released), and any service the environment names."""
    loaded = EmbedderPool(
        lambda model: (
            remote_embedder(EmbeddingSettings(), Endpoint.parse(model))
            if is_remote(model)
            else CountingEmbedder(embedder)
        )
    )
    yield loaded
    loaded.close()


def use_service(monkeypatch: pytest.MonkeyPatch, server: EmbeddingServer, **extra: str) -> None:
    """Route with ``server``: quick retries, so an outage shows at once."""
    settings = {
        "URL": server.url,
        "MODEL": "hash-embed",
        "API_KEY": "sk-test",
        "DIMENSIONS": "64",
        "RETRIES": "1",
        "BACKOFF": "0.05",
        "TIMEOUT": "2",
        "QUERY_PREFIX": "query: ",
        "DOCUMENT_PREFIX": "passage: ",
    } | extra
    for name, value in settings.items():
        monkeypatch.setenv(f"ROUTER_EMBEDDING_{name}", value)
    monkeypatch.setenv("ROUTER_SYNC_RETRY_SECONDS", "0.1")


def route(text: str, **fields: Any) -> dict[str, Any]:
    return {"namespace": "tools", "messages": [{"role": "user", "content": text}], **fields}


def run(text: str, name: str) -> list[dict[str, Any]]:
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": "done"},
    ]


async def rebuilt(served: Served) -> None:
    tasks = [t for t in served.runtime._tasks if t.get_name() == "rebuild"]
    assert tasks, "no rebuild was started"
    async with asyncio.timeout(60):
        await asyncio.wait(tasks)


async def test_switching_to_a_service_re_embeds_everything_while_the_old_model_serves(
    serve: Callable[..., Any],
    catalog_dir: Path,
    pool: EmbedderPool,
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS, TIMEZONE])
    async with serve(catalog=catalog_dir, pool=pool) as served:
        client = served.client
        said = {"messages": [{"role": "user", "content": "I prefer Celsius."}], "user_id": "ana", "namespace": "tools"}
        assert (await client.post("/v1/sessions/s-1/messages", json=said)).status_code == 200
        await served.runtime.turns.record("s-2", run(ASKED, "get_weather"), user_id=None, namespace="tools")
        local = served.runtime.service.index.generation

    use_service(monkeypatch, embedding_server)
    embedding_server.stop()  # down when the router starts on it: the local generation keeps serving
    async with serve(catalog=catalog_dir, pool=pool) as served:
        client = served.client
        status = (await client.get("/v1/status")).json()
        assert status["generation"]["model"] == DEFAULT_MODEL
        assert status["generation"]["rebuild_pending"] is True
        during = await client.post("/v1/route", json=route("what is the weather in Oslo"))
        assert during.status_code == 200, during.text
        assert during.json()["functions"][0]["name"] == "get_weather"

        embedding_server.start()
        await rebuilt(served)
        identity = EmbeddingSettings().identity
        generation = served.runtime.service.index.generation
        assert (generation.model, generation.dimension) == (identity, 64)
        texts = embedding_server.texts()
        documents = [t for t in texts if t.startswith("passage: ")]
        for function in (WEATHER, STOCKS, TIMEZONE):
            assert any(function["description"] in t for t in documents), f"{function['name']} was not re-embedded"
        assert "passage: I prefer Celsius." in texts, "the memory was re-embedded"
        assert f"query: {ASKED}" in texts, "the usage example was re-embedded, as the query it was"
        storage = served.runtime.storage
        assert not storage.exists(local.spec.name)
        assert not storage.exists(memory_spec(DEFAULT_MODEL, 384).name)
        assert storage.exists(memory_spec(identity, 64).name)

        after = await client.post("/v1/route", json=route("the weather in Oslo"))
        assert after.status_code == 200, after.text
        assert "query: the weather in Oslo" in embedding_server.texts()
        kept = (await client.get("/v1/users/ana/memories")).json()["memories"]
        assert [m["text"] for m in kept] == ["I prefer Celsius."]
        status = (await client.get("/v1/status")).json()
        assert status["generation"]["provider"] == "openai"
        embedding = status["embedding"]
        assert (embedding["provider"], embedding["model"], embedding["url"]) == (
            "openai",
            "hash-embed",
            embedding_server.url,
        )
        assert embedding["failure"] is None
        assert "sk-test" not in str(status)
        metrics = (await client.get("/metrics")).text
        assert 'router_embedding_texts_total{kind="catalog"} 3.0' in metrics
        # The service was down when the rebuild first asked it: that request failed, or waited for it.
        assert any(
            f'router_embedding_requests_total{{kind="catalog",outcome="{outcome}"}}' in metrics
            for outcome in ("failed", "retried")
        )
        assert 'router_embedding_tokens_total{kind="query"}' in metrics


async def test_the_service_down_fails_the_sync_and_routes_clearly_and_both_recover(
    serve: Callable[..., Any],
    catalog_dir: Path,
    pool: EmbedderPool,
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_service(monkeypatch, embedding_server)
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    async with serve(catalog=catalog_dir, pool=pool) as served:
        client = served.client
        assert (await client.get("/readyz")).json()["checks"]["embedding"] is True
        assert (await client.post("/v1/route", json=route("the weather"))).status_code == 200

        embedding_server.stop()
        write_catalog(catalog_dir, "tools", [WEATHER, STOCKS, TIMEZONE])

        async def sync_failed() -> bool:
            status = (await client.get("/v1/status")).json()
            return status["catalogs"][0]["last_sync"]["outcome"] == "failed"

        await eventually(sync_failed, within=10)
        status = (await client.get("/v1/status")).json()
        tools = status["catalogs"][0]
        assert embedding_server.url in tools["last_sync"]["detail"]
        assert tools["count"] == 2, "the stored catalog is kept"
        names = [f["name"] for f in (await client.get("/v1/catalogs/tools")).json()["functions"]]
        assert sorted(names) == ["get_stock_price", "get_weather"]

        refused = await client.post("/v1/route", json=route("what time is it in Tokyo"))
        assert refused.status_code == 503
        assert refused.json()["error"] == "EmbeddingUnavailable"
        assert embedding_server.url in refused.json()["detail"]
        ready = await client.get("/readyz")
        assert ready.status_code == 503
        assert ready.json()["status"] == "unavailable"  # started: not "starting"
        assert ready.json()["checks"] == {"storage": True, "model": True, "first_sync": True, "embedding": False}

        embedding_server.start()

        async def synced() -> bool:
            return (await client.get("/v1/catalogs/tools")).json()["count"] == 3

        await eventually(synced, within=15)
        answered = await client.post("/v1/route", json=route("what time is it in Tokyo"))
        assert answered.status_code == 200, answered.text

        async def ready_again() -> bool:
            return (await client.get("/readyz")).status_code == 200

        await eventually(ready_again, within=10)


async def test_routes_fail_open_to_the_pinned_functions_while_the_service_is_down(
    serve: Callable[..., Any],
    catalog_dir: Path,
    pool: EmbedderPool,
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_service(monkeypatch, embedding_server)
    monkeypatch.setenv("ROUTER_ROUTE_FAIL_OPEN", "true")
    write_catalog(catalog_dir, "tools", {"functions": [WEATHER, STOCKS, TIMEZONE], "pinned": ["get_local_time"]})
    async with serve(catalog=catalog_dir, pool=pool) as served:
        embedding_server.inject(*[Fault(status=503)] * 4)
        degraded = await served.client.post("/v1/route", json=route("the weather in Oslo"))
        assert degraded.status_code == 200, degraded.text
        answer = degraded.json()
        assert answer["degraded"] is True
        assert [f["name"] for f in answer["functions"]] == ["get_local_time"]
        metrics = (await served.client.get("/metrics")).text
        assert "router_route_degraded_total 1.0" in metrics
        embedding_server.stop()  # down for the readiness check too: failing open, the process stays ready
        ready = await served.client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json()["checks"]["embedding"] is False


async def test_a_wrong_answer_is_never_stored(
    serve: Callable[..., Any],
    catalog_dir: Path,
    pool: EmbedderPool,
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_service(monkeypatch, embedding_server, BATCH_SIZE="2")
    write_catalog(catalog_dir, "tools", [WEATHER])
    async with serve(catalog=catalog_dir, pool=pool) as served:
        embedding_server.inject(Fault(dimension=63))
        response = await served.client.put("/v1/catalogs/other", json={"functions": [STOCKS, TIMEZONE]})
        assert response.status_code == 503
        assert "expected 64" in response.json()["detail"]
        missing = await served.client.get("/v1/catalogs/other")
        assert missing.status_code == 404


async def test_another_model_of_the_service_is_built_while_the_first_one_serves(
    serve: Callable[..., Any],
    catalog_dir: Path,
    pool: EmbedderPool,
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_service(monkeypatch, embedding_server)
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS, TIMEZONE])
    async with serve(catalog=catalog_dir, pool=pool) as served:
        first = served.runtime.service.index.generation

    use_service(monkeypatch, embedding_server, MODEL="hash-embed-2", DOCUMENT_PREFIX="document: ")
    embedding_server.received.clear()
    # The new model fails for a while: the first rebuilds fail, and the first model serves meanwhile.
    # Two rebuilds fail (a request and its retry each), 1 s then 2 s apart.
    monkeypatch.setenv("ROUTER_SYNC_RETRY_SECONDS", "1")
    embedding_server.inject(*[Fault(status=503, model="hash-embed-2")] * 4)
    async with serve(catalog=catalog_dir, pool=pool) as served:
        during = await served.client.post("/v1/route", json=route("the weather in Oslo"))
        assert during.status_code == 200, during.text
        assert served.runtime.service.index.generation == first
        assert (await served.client.get("/v1/status")).json()["generation"]["rebuild_pending"] is True
        await rebuilt(served)
        second = served.runtime.service.index.generation
        assert second.model == EmbeddingSettings().identity != first.model
        assert not served.runtime.storage.exists(first.spec.name)
    models = {r.body["model"] for r in embedding_server.received}
    assert models == {"hash-embed", "hash-embed-2"}, "the first model served while the second was built"
    documents = [t for r in embedding_server.received if r.body["model"] == "hash-embed-2" for t in r.body["input"]]
    assert sum(t.startswith("document: ") for t in documents) >= 3
