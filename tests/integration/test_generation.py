"""Changing the text template rebuilds the vectors as a new generation, without downtime.

The counting embedder holds the rebuild's embeddings (texts made with the new template carry
". Parameters: ") so each test can look at the service while the new generation is half built.
"""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import EXAMPLE_COUNTS, EXAMPLES, STOCKS, WEATHER, CountingEmbedder, Served

import sync.service as service_module
from router.catalog.records import CATALOG_IDF, Generation, MetaStore
from router.embedding import DEFAULT_MODEL, EmbedderPool
from router.retrieval.index import FunctionStore
from router.server.embedding_settings import EmbeddingSettings
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings

pytestmark = pytest.mark.integration

OLD, NEW = "name_description", "name_description_parameters"
# Two example namespaces keep the rebuilds short; commerce is copied before travel.
NAMESPACES = ("commerce", "travel")
TOTAL = sum(EXAMPLE_COUNTS[ns] for ns in NAMESPACES)
FLIGHT = {
    "namespace": "travel",
    "messages": [{"role": "user", "content": "find me a flight from Lisbon to Rome"}],
    "max_functions": 5,
}


def new_template(texts: list[str]) -> bool:
    return any(". Parameters: " in t for t in texts)


async def route(client: httpx.AsyncClient) -> list[tuple[str, float]]:
    response = await client.post("/v1/route", json=FLIGHT)
    assert response.status_code == 200, response.text
    return [(f["name"], f["score"]) for f in response.json()["functions"]]


async def rebuilt(served: Served) -> None:
    """Wait until the runtime's background rebuild has finished, old collection dropped included."""
    tasks = [t for t in served.runtime._tasks if t.get_name() == "rebuild"]
    assert tasks, "no rebuild was started"
    async with asyncio.timeout(120):
        await asyncio.wait(tasks)


def generation(text: str, dimension: int) -> Generation:
    return Generation(DEFAULT_MODEL, text, dimension)


def test_generations_differ_by_model_template_and_dimension() -> None:
    ids = {
        Generation(DEFAULT_MODEL, OLD, 384).id,
        Generation(DEFAULT_MODEL, NEW, 384).id,
        Generation("other-model", OLD, 384).id,
        Generation(DEFAULT_MODEL, OLD, 768).id,
    }

    assert len(ids) == 4
    assert Generation(DEFAULT_MODEL, OLD, 384).spec.name == f"functions-{Generation(DEFAULT_MODEL, OLD, 384).id}"


@pytest.fixture
def small_examples(tmp_path: Path) -> Path:
    """Part of the example catalog."""
    path = tmp_path / "examples"
    path.mkdir()
    for namespace in NAMESPACES:
        shutil.copy(EXAMPLES / f"{namespace}.json", path)
    return path


@pytest.fixture
async def built(serve: Callable[..., Any], small_examples: Path) -> list[tuple[str, float]]:
    """A data directory built with the old template; the flight route it answered."""
    async with serve(catalog=small_examples, text=OLD) as served:
        return await route(served.client)


async def test_a_new_template_is_built_beside_the_old_generation(
    serve: Callable[..., Any],
    small_examples: Path,
    built: list[tuple[str, float]],
    counting: CountingEmbedder,
    counting_pool: EmbedderPool,
) -> None:
    hold = counting.pause(new_template)
    try:
        async with serve(catalog=small_examples, pool=counting_pool, text=NEW) as served:
            async with asyncio.timeout(60):
                await hold.reached.wait()
            service, storage = served.runtime.service, served.runtime.storage
            old, new = generation(OLD, counting.dimension), generation(NEW, counting.dimension)

            # Halfway: still serving, from the old generation.
            assert service.rebuild_pending
            assert service.index.generation == old
            assert MetaStore.open(storage).active_generation() == old
            assert (await served.client.get("/readyz")).status_code == 200
            assert await route(served.client) == built

            hold.release()
            await rebuilt(served)

            assert MetaStore.open(storage).active_generation() == new
            assert service.index.generation == new
            assert not storage.exists(old.spec.name)
            assert storage.exists(new.spec.name)
            payloads = [r.payload for r in FunctionStore.open(storage, new).collection.scroll()]
            after = await route(served.client)
    finally:
        hold.release()

    assert len(payloads) == TOTAL
    assert {(p["embedding_model"], p["text_template"]) for p in payloads} == {(DEFAULT_MODEL, NEW)}
    assert counting.embedded == TOTAL  # each function embedded once for the new generation
    assert all(new_template([t]) for t in counting.texts())
    assert "search_flights" in [name for name, _ in after[:3]]
    assert after != built  # new vectors, new scores


async def test_writes_during_the_rebuild_reach_the_new_generation(
    serve: Callable[..., Any],
    small_examples: Path,
    built: list[tuple[str, float]],
    counting: CountingEmbedder,
    counting_pool: EmbedderPool,
) -> None:
    hold = counting.pause(new_template)
    try:
        async with serve(catalog=small_examples, pool=counting_pool, text=NEW) as served:
            async with asyncio.timeout(60):
                await hold.reached.wait()
            put = await served.client.put("/v1/catalogs/fresh", json={"functions": [WEATHER, STOCKS]})
            hold.release()
            await rebuilt(served)
            fresh = (await served.client.get("/v1/catalogs/fresh")).json()
            store = served.runtime.service.index.store
            templates = {r.payload["text_template"] for r in store.collection.scroll({"namespace": "fresh"})}
    finally:
        hold.release()

    assert put.json()["added"] == 2
    assert fresh["count"] == 2
    assert sorted(f["name"] for f in fresh["functions"]) == ["get_stock_price", "get_weather"]
    assert templates == {NEW}


async def test_a_namespace_deleted_during_the_rebuild_is_gone_from_the_new_generation(
    serve: Callable[..., Any],
    small_examples: Path,
    built: list[tuple[str, float]],
    counting: CountingEmbedder,
    counting_pool: EmbedderPool,
) -> None:
    commerce = (small_examples / "commerce.json").read_text()
    # Namespaces are copied in order; hold on travel, after commerce was copied.
    hold = counting.pause(lambda texts: new_template(texts) and any("search_flights" in t for t in texts))
    try:
        async with serve(pool=counting_pool, text=NEW) as served:
            async with asyncio.timeout(60):
                await hold.reached.wait()
            deleted = await served.client.delete("/v1/catalogs/commerce")
            hold.release()
            await rebuilt(served)
            orphans = served.runtime.service.index.store.count("commerce")
            again = await served.client.put("/v1/catalogs/commerce", json=json.loads(commerce))
    finally:
        hold.release()

    assert deleted.json()["removed"] == EXAMPLE_COUNTS["commerce"]
    assert orphans == 0
    assert again.json()["added"] == EXAMPLE_COUNTS["commerce"]


async def test_a_restart_after_the_switch_rebuilds_nothing(
    serve: Callable[..., Any],
    small_examples: Path,
    built: list[tuple[str, float]],
    counting: CountingEmbedder,
    counting_pool: EmbedderPool,
    embedders: EmbedderPool,
) -> None:
    async with serve(catalog=small_examples, text=NEW) as switched:
        await rebuilt(switched)
        expected = await route(switched.client)

    async with serve(catalog=small_examples, pool=counting_pool, text=NEW) as again:
        assert not again.runtime.service.rebuild_pending
        assert await route(again.client) == expected
    assert counting.calls == []


async def test_a_rebuild_started_by_the_runtime_and_by_the_cli_embeds_each_function_once(
    tmp_path: Path, built: list[tuple[str, float]], counting: CountingEmbedder, counting_pool: EmbedderPool
) -> None:
    settings = Settings(embedding=EmbeddingSettings(text=NEW), storage=StorageSettings(data=tmp_path / "data"))
    runtime = Runtime(settings, embedders=counting_pool)
    await runtime.start()
    try:
        await runtime.service.rebuild()  # what `router sync` does after start()
        async with asyncio.timeout(120):
            await asyncio.wait([t for t in runtime._tasks if t.get_name() == "rebuild"])
    finally:
        await runtime.stop()

    assert counting.embedded == TOTAL


async def test_a_store_from_before_catalog_idf_is_served_then_rebuilt(
    serve: Callable[..., Any], small_examples: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patched:
        # Written as the previous version wrote it: the engine weighs words over the collection.
        patched.setattr(service_module, "Generation", functools.partial(Generation, version=CATALOG_IDF - 1))
        async with serve(catalog=small_examples, text=OLD) as served:
            before = await route(served.client)
            index = served.runtime.service.index
            assert index.generation.spec.sparse_idf
            assert index.store.frequencies("travel") is None

    async with serve(catalog=small_examples, text=OLD) as served:
        await rebuilt(served)
        index = served.runtime.service.index
        after = await route(served.client)
        frequencies = index.store.frequencies("travel")

    assert not index.generation.spec.sparse_idf
    assert frequencies is not None
    assert frequencies.functions == EXAMPLE_COUNTS["travel"]
    assert after[0][0] == before[0][0] == "search_flights"
