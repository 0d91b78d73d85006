"""Stopping and starting again on the same data directory, and the directory's single owner."""

from __future__ import annotations

import asyncio
import gc
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from conftest import EXAMPLE_COUNTS, STOCKS, TIMEZONE, WEATHER, CountingEmbedder, bare, write_catalog

from router.app import create_app
from router.embedding import EmbedderPool
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from router.storage.base import StorageUnavailable

pytestmark = pytest.mark.integration

FLIGHT = {"namespace": "travel", "messages": [{"role": "user", "content": "find me a flight from Lisbon to Rome"}]}


async def snapshot(client: httpx.AsyncClient) -> dict[str, Any]:
    """Everything a client can read: the catalog list, every catalog, one route."""
    listed = (await client.get("/v1/catalogs")).json()
    catalogs = {c["namespace"]: (await client.get(f"/v1/catalogs/{c['namespace']}")).json() for c in listed["catalogs"]}
    routed = (await client.post("/v1/route", json={**FLIGHT, "max_functions": 5})).json()
    return {
        "listed": listed,
        "catalogs": catalogs,
        "route": [(f["name"], round(f["score"], 4)) for f in routed["functions"]],
    }


async def test_a_restart_keeps_every_catalog(
    serve: Callable[..., Any], examples_dir: Path, counting: CountingEmbedder, counting_pool: EmbedderPool
) -> None:
    async with serve(catalog=examples_dir) as first:
        put = await first.client.put("/v1/catalogs/extra", json={"functions": [WEATHER, STOCKS, TIMEZONE]})
        before = await snapshot(first.client)

    async with serve(pool=counting_pool) as second:
        after = await snapshot(second.client)

    assert put.status_code == 200
    assert {c["namespace"]: c["count"] for c in before["listed"]["catalogs"]} == {**EXAMPLE_COUNTS, "extra": 3}
    assert after == before
    assert counting.calls == []  # nothing was embedded again


async def test_a_restart_on_the_same_directory_embeds_nothing(
    serve: Callable[..., Any], examples_dir: Path, counting: CountingEmbedder, counting_pool: EmbedderPool
) -> None:
    async with serve(catalog=examples_dir) as first:
        before = await snapshot(first.client)

    async with serve(catalog=examples_dir, pool=counting_pool) as second:
        after = await snapshot(second.client)

    assert after == before  # updated_at included: unchanged catalogs are not rewritten
    assert counting.calls == []


async def test_edits_made_while_stopped_are_applied_at_start(
    serve: Callable[..., Any], catalog_dir: Path, counting: CountingEmbedder, counting_pool: EmbedderPool
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    write_catalog(catalog_dir, "gone", [TIMEZONE])
    async with serve(catalog=catalog_dir):
        pass
    news = bare("get_news", "Latest news headlines on a topic.", topic="Topic")
    write_catalog(catalog_dir, "tools", [WEATHER, news])
    (catalog_dir / "gone.json").unlink()

    async with serve(catalog=catalog_dir, pool=counting_pool) as second:
        tools = (await second.client.get("/v1/catalogs/tools")).json()
        gone = await second.client.get("/v1/catalogs/gone")

    assert sorted(f["name"] for f in tools["functions"]) == ["get_news", "get_weather"]
    assert counting.embedded == 1
    assert gone.status_code == 200  # a file removed while stopped never deletes its catalog


async def test_a_second_runtime_on_the_same_directory_is_refused(
    serve: Callable[..., Any], examples_dir: Path, embedders: EmbedderPool
) -> None:
    async with serve(catalog=examples_dir) as first:
        second = Runtime(Settings(storage=StorageSettings(data=first.data)), embedders=embedders)
        with pytest.raises(StorageUnavailable) as refused:
            await second.start()
        await second.stop()
        still = await first.client.get("/readyz")

    message = str(refused.value)
    assert message.startswith(f"data directory {first.data} is in use by pid {os.getpid()}")
    assert "use a Qdrant server URL" in message
    assert second.error is refused.value
    assert still.status_code == 200

    # Once the first runtime has stopped, the directory can be opened again.
    async with serve() as third:
        assert (await third.client.get("/readyz")).status_code == 200


async def test_an_app_on_a_directory_in_use_fails_to_start(
    serve: Callable[..., Any], tmp_path: Path, embedders: EmbedderPool
) -> None:
    async with serve():
        app = create_app(
            runtime=Runtime(Settings(storage=StorageSettings(data=tmp_path / "data")), embedders=embedders)
        )
        with pytest.raises(StorageUnavailable, match="is in use by pid"):
            async with LifespanManager(app, startup_timeout=60):
                pass


async def test_stopping_right_after_start_leaves_no_coroutine_unawaited(
    tmp_path: Path, catalog_dir: Path, embedders: EmbedderPool
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER])
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"), sync=SyncSettings(catalog=catalog_dir))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runtime = Runtime(settings, embedders=embedders)
        await runtime.start()
        await runtime.stop()
        del runtime
        gc.collect()
        await asyncio.sleep(0)

    assert [str(w.message) for w in caught if "never awaited" in str(w.message)] == []


async def test_a_background_task_that_failed_does_not_keep_storage_open(
    tmp_path: Path, embedders: EmbedderPool
) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"))
    runtime = Runtime(settings, embedders=embedders)
    await runtime.start()

    async def fails() -> None:
        raise RuntimeError("the watcher broke")

    runtime._spawn(fails(), "failing")
    await asyncio.sleep(0.05)
    await runtime.stop()

    again = Runtime(settings, embedders=embedders)
    await again.start()  # refused while the first still held the directory
    await again.stop()
