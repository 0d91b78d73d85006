"""A model change re-embeds the usage examples into the new model's store, so learning survives it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from conftest import CountingEmbedder

from router.embedding import DEFAULT_MODEL, Embedder, EmbedderPool
from router.retrieval.examples import ExampleStore
from router.routing.routed import Turn
from router.server.embedding_settings import EmbeddingSettings
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings
from tests.conftest import bare

pytestmark = pytest.mark.integration

OTHER = "renamed-minilm"
CATALOG = [
    bare("send_email", "Send an email message.", to="Recipient", body="Text"),
    bare("post_slack_message", "Post a message to a chat channel.", channel="Channel", text="Text"),
    bare("page_oncall", "Page the on-call engineer.", severity="Severity"),
]
ASKED = "give the crew a heads-up about the maintenance window"


class Renamed(CountingEmbedder):
    """The session's model under another name: a model change without a second model."""

    def __init__(self, inner: Embedder, name: str) -> None:
        super().__init__(inner)
        self.model_name = name


def runtime(data: Path, model: str, pool: EmbedderPool) -> Runtime:
    return Runtime(
        Settings(embedding=EmbeddingSettings(model=model), storage=StorageSettings(data=data)), embedders=pool
    )


def run(text: str, name: str) -> list[dict[str, Any]]:
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": "{}"}}
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": "sent"},
    ]


async def test_a_new_model_keeps_the_examples_learned_with_the_old_one(tmp_path: Path, embedder: Embedder) -> None:
    pool = EmbedderPool(lambda model: Renamed(embedder, model))
    data = tmp_path / "data"
    first = runtime(data, DEFAULT_MODEL, pool)
    await first.start()
    try:
        await first.service.apply("ops", [_parse(f) for f in CATALOG], source="test")
        await first.turns.record("s-1", run(ASKED, "send_email"), user_id=None, namespace="ops")
        old = first.service.index.store.examples
        assert old is not None
        assert old.texts("ops", "send_email") == [ASKED]
    finally:
        await first.stop()

    second = runtime(data, OTHER, pool)
    await second.start()
    try:
        async with asyncio.timeout(120):
            await asyncio.wait([t for t in second._tasks if t.get_name() == "rebuild"])
        index = second.service.index
        assert index.generation.model == OTHER
        new = index.store.examples
        assert new is not None
        assert new.model == OTHER
        assert new.collection.spec.name == ExampleStore.spec(model=OTHER, dimension=embedder.dimension).name
        assert new.collection.spec.name != old.collection.spec.name
        assert new.texts("ops", "send_email") == [ASKED]
        turn = Turn("ops", [{"role": "user", "content": "give the crew a heads up about tonight's maintenance window"}])
        routed = await second.turns.route(turn)
        candidates_seen = [f.function.name for f in routed.functions]
        assert candidates_seen[0] == "send_email"
    finally:
        await second.stop()


def _parse(raw: dict[str, Any]) -> Any:
    from router.catalog.functions import parse_function

    return parse_function(raw, where="test")
