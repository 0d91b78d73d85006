"""Memories come back when they matter: ten everyday cases through the real route and model.

A user says something once ("I am vegetarian and allergic to peanuts"); in a later session a
request that shares no words with it ("a restaurant near the Louvre") routes to a function
whose parameters it matters to (``dietary_restrictions``), and the memory comes back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from router.embedding import EmbedderPool
from router.routing.routed import Turn
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from tests.conftest import ROOT
from tests.docs import marked
from tests.integration.everyday import CASES, CATALOG, OTHER_MEMORIES

pytestmark = pytest.mark.integration

NAMESPACE = "assistant"
DOCS = ROOT / "docs" / "architecture.md"


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    directory = tmp_path / "catalog"
    directory.mkdir()
    (directory / f"{NAMESPACE}.json").write_text(json.dumps({"functions": CATALOG}))
    return directory


async def say(client: httpx.AsyncClient, session: str, user: str, text: str) -> int:
    body = {"messages": [{"role": "user", "content": text}], "user_id": user, "namespace": NAMESPACE}
    response = await client.post(f"/v1/sessions/{session}/messages", json=body)
    assert response.status_code == 200, response.text
    return int(response.json()["memories_added"])


async def route(client: httpx.AsyncClient, session: str, user: str, text: str) -> dict[str, Any]:
    body = {
        "namespace": NAMESPACE,
        "session_id": session,
        "user_id": user,
        "messages": [{"role": "user", "content": text}],
    }
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def texts(answer: dict[str, Any]) -> list[str]:
    return [m["text"] for m in answer["memories"]]


async def test_each_everyday_memory_comes_back_for_the_request_it_matters_to(
    serve: Callable[..., Any], catalog: Path
) -> None:
    async with serve(catalog=catalog) as served:
        missed = []
        for number, case in enumerate(CASES):
            user = f"user-{number}"
            assert await say(served.client, f"first-{number}", user, case.said) == 1, case.said
            answer = await route(served.client, f"later-{number}", user, case.request)
            assert answer["functions"][0]["name"] == case.function, (case.request, answer["functions"])
            if texts(answer) != [case.memory]:
                missed.append((case.request, texts(answer)))
            else:
                assert case.memory in answer["memory_context"]
        assert missed == []


async def test_with_all_ten_memories_every_request_gets_its_own(serve: Callable[..., Any], catalog: Path) -> None:
    async with serve(catalog=catalog) as served:
        for number, case in enumerate(CASES):
            assert await say(served.client, f"week-{number}", "busy", case.said) == 1
        missed, unrelated = [], 0
        for number, case in enumerate(CASES):
            returned = texts(await route(served.client, f"today-{number}", "busy", case.request))
            if case.memory not in returned:
                missed.append((case.request, returned))
            unrelated += len([t for t in returned if t != case.memory])
        assert missed == []
        assert unrelated <= len(CASES), f"{unrelated} unrelated memories over {len(CASES)} routes"


async def test_a_memory_that_matters_to_nothing_in_the_turn_stays_out(serve: Callable[..., Any], catalog: Path) -> None:
    async with serve(catalog=catalog) as served:
        await say(served.client, "one", "solo", "I prefer aisle seats.")
        for request in ("Deploy version 2.4.1 of the checkout service to production", "Convert 40 euros to yen"):
            assert texts(await route(served.client, "two", "solo", request)) == [], request
        assert texts(await route(served.client, "two", "solo", "Book a flight to Oslo on Friday")) == [
            "I prefer aisle seats."
        ]


async def test_a_preference_said_beside_a_request_comes_back_later(serve: Callable[..., Any], catalog: Path) -> None:
    async with serve(catalog=catalog) as served:
        assert await say(served.client, "monday", "diner", "Book me a table for two at eight, I am vegetarian.") == 1
        answer = await route(served.client, "friday", "diner", "Recommend a restaurant near the Louvre for tonight")
        assert answer["functions"][0]["name"] == "find_restaurants"
        assert texts(answer) == ["I am vegetarian."]


class ListedFacts:
    """A stand-in for a model-based extractor: the facts a model would list, one per line."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def extract(self, text: str) -> list[str]:
        self.seen.append(text)
        return ["The user is vegetarian.", "The user is allergic to peanuts."] if "vegetarian" in text else []


async def test_another_extractor_plugs_in_through_the_runtime(
    tmp_path: Path, catalog: Path, embedders: EmbedderPool
) -> None:
    extractor = ListedFacts()
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"), sync=SyncSettings(catalog=catalog))
    runtime = Runtime(settings, embedders=embedders, extractor=extractor)
    await runtime.start()
    try:
        await runtime.wait_ready()
        run = [
            {"role": "user", "content": "Please remember that I am vegetarian and allergic to peanuts."},
            {"role": "assistant", "content": "I am vegetarian too."},
        ]
        _, changes = await runtime.turns.record("s", run, user_id="vera", namespace=NAMESPACE)
        assert (changes.added, extractor.seen) == (2, [run[0]["content"]])
        turn = Turn(NAMESPACE, [{"role": "user", "content": "Recommend a restaurant near the Louvre"}], user_id="vera")
        routed = await runtime.turns.route(turn)
        assert "The user is vegetarian." in [m.text for m in routed.memories]
    finally:
        await runtime.stop()


def test_the_documented_extractor_reads_a_models_list() -> None:
    block = marked(DOCS, "memory-extractor")
    prompts: list[str] = []

    def ask_my_model(prompt: str) -> str:
        prompts.append(prompt)
        return "Here they are:\n- The user is vegetarian.\n- The user lives in Porto.\n"

    namespace: dict[str, Any] = {"ask_my_model": ask_my_model, "__name__": "__docs__"}
    exec(compile(block, str(DOCS), "exec"), namespace)  # noqa: S102
    assert isinstance(namespace["app"], FastAPI)
    extractor = namespace["ModelExtractor"](ask_my_model)
    assert extractor.extract("I'm vegetarian and I live in Porto.") == [
        "The user is vegetarian.",
        "The user lives in Porto.",
    ]
    assert "I'm vegetarian and I live in Porto." in prompts[-1]


async def test_a_route_encodes_only_its_turn_while_facets_bring_a_memory_back(
    tmp_path: Path, catalog: Path, embedders: EmbedderPool
) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"), sync=SyncSettings(catalog=catalog))
    runtime = Runtime(settings, embedders=embedders)
    encoded: list[tuple[str, int]] = []

    def observe(kind: str, texts: int, _seconds: float) -> None:
        encoded.append((kind, texts))

    await runtime.start()
    embedders.observers.append(observe)
    try:
        await runtime.wait_ready()
        turns, text = runtime.turns, "I am vegetarian and allergic to peanuts."
        await turns.record("s", [{"role": "user", "content": text}], user_id="u", namespace=NAMESPACE)
        encoded.clear()

        turn = Turn(
            NAMESPACE, [{"role": "user", "content": "Recommend a restaurant near the Louvre tonight"}], user_id="u"
        )
        routed = await turns.route(turn)
    finally:
        embedders.observers.remove(observe)
        await runtime.stop()

    assert [m.text for m in routed.memories] == [text]
    assert encoded == [("query", 1)], "the facets were embedded when the catalog was synced"


async def test_among_fifty_memories_the_one_a_request_needs_is_in_the_first_five(
    serve: Callable[..., Any], catalog: Path
) -> None:
    async with serve(catalog=catalog) as served:
        said = [case.said for case in CASES] + OTHER_MEMORIES
        body = {"messages": [{"role": "user", "content": s} for s in said], "user_id": "many", "namespace": NAMESPACE}
        response = await served.client.post("/v1/sessions/long/messages", json=body)
        assert response.json()["memories_added"] == len(said)
        turns = served.runtime.turns
        turns.settings = turns.settings.model_copy(update={"max_memories": 5, "memory_standout": 0.0})
        missed = [
            case.request
            for number, case in enumerate(CASES)
            if case.memory not in texts(await route(served.client, f"ask-{number}", "many", case.request))
        ]
        assert len(missed) <= len(CASES) // 10, missed
