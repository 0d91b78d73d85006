"""Storage that goes away answers 503 with a clear body, and recovers when it comes back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from router.app import create_app
from router.embedding import EmbedderPool
from router.runtime import Runtime
from router.settings import Settings, StorageSettings, SyncSettings
from router.storage.base import Collection, CollectionSpec, Storage, StorageUnavailable
from router.storage.client import ClientStorage
from tests.conftest import EXAMPLES, STOCKS, WEATHER, write_catalog
from tests.integration.test_watch import WITHIN, logged

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
        await logged(caplog, "catalog sync pass failed")
        assert not runtime.readiness()["first_sync"]

        storage.down = False

        # Nothing in the directory changes again: the worker retries on its own.
        async with asyncio.timeout(WITHIN):
            await runtime.wait_ready()
        assert set(await runtime.service.catalogs()) == {"tools"}
    finally:
        await runtime.stop()
