"""API replicas in server mode share everything through storage: catalogs, sessions, memories.

Two runtimes on one store stand for two API processes on one Qdrant server (here
qdrant-client's in-memory mode); ``tests/server`` runs the same checks on a real server with
``router sync`` as its own process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from router.embedding import DEFAULT_MODEL, EmbedderPool
from router.retrieval.texts import DEFAULT_TEMPLATE
from router.storage.client import ClientStorage
from sync.service import CatalogService
from sync.worker import DirectorySync
from tests.conftest import EXAMPLE_COUNTS, EXAMPLES, WEATHER, Served, run_app
from tests.integration.test_route_sessions import post, route

pytestmark = pytest.mark.integration
CALLED = ("book_flight", "convert_currency")  # routed for the follow-up, and not


async def share_everything(first: Served, second: Served) -> None:
    """What one replica stores, the other serves at once."""
    listed = (await second.client.get("/v1/catalogs")).json()["catalogs"]
    assert {c["namespace"]: c["count"] for c in listed} == EXAMPLE_COUNTS

    found = await route(first.client, "travel", "Find me flights from Lisbon to Rome next Friday")
    assert found["functions"][0]["name"] == "search_flights"
    await post(
        first.client,
        "trip",
        [
            {
                "role": "user",
                "content": "I am vegetarian and I prefer aisle seats. Find me flights from Lisbon to Rome next Friday",
            },
            {"role": "assistant", "content": "I found TP 840, AZ 201 and FR 123."},
        ],
        user_id="ana",
        namespace="travel",
    )

    follow_up = await route(second.client, "travel", "Book TP 840 for John Smith", session_id="trip")
    meal = await route(second.client, "travel", "Which meal can I get on my flight?", user_id="ana")
    assert follow_up["functions"][0]["name"] == "book_flight"
    assert [m["role"] for m in follow_up["history"]] == ["user", "assistant"]
    assert follow_up["history"][0]["content"].startswith("I am vegetarian")
    assert "vegetarian" in meal["memory_context"]

    # The route's record is written just after it answers; the model runs before its run is stored.
    await second.runtime.turns.checks.settle()
    called = [{"id": f"c-{n}", "type": "function", "function": {"name": n, "arguments": "{}"}} for n in CALLED]
    run = [{"role": "user", "content": "Book TP 840 for John Smith"}, {"role": "assistant", "tool_calls": called}]
    await post(first.client, "trip", run, namespace="travel")
    misses = (await second.client.get("/v1/catalogs/travel/misses")).json()
    assert misses["counts"] == {"routed": 1, "searched": 0, "missed": 1}
    assert [m["function"] for m in misses["latest"]] == ["convert_currency"]

    put = await first.client.put("/v1/catalogs/weather", json={"functions": [WEATHER]})
    assert put.status_code == 200, put.text
    weather = await route(second.client, "weather", "Will it rain in Porto tomorrow?")
    assert weather["functions"][0]["name"] == "get_weather"


async def test_two_replicas_on_one_store_share_everything(embedders: EmbedderPool, tmp_path: Path) -> None:
    storage = ClientStorage.in_memory()
    try:
        service = CatalogService(storage, embedders, model=DEFAULT_MODEL, text=DEFAULT_TEMPLATE)
        await service.open()
        report = await DirectorySync(service, EXAMPLES).run_once()
        assert not report.rejected

        async with (
            run_app(data=tmp_path / "a", pool=embedders, storage=storage) as first,
            run_app(data=tmp_path / "b", pool=embedders, storage=storage) as second,
        ):
            await share_everything(first, second)
    finally:
        storage.close()
