"""The router on a real Qdrant server: a sync worker process, two API replicas, and a migration.

This is docker-compose.yml's topology without the images: ``router sync`` as its own process,
API replicas that hold nothing of their own, and ``router migrate`` from an embedded deployment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from router.embedding import EmbedderPool
from tests.conftest import EXAMPLE_COUNTS, EXAMPLES, WEATHER, run_app
from tests.integration import test_migrate as migration
from tests.integration.test_cli import SUMMARY
from tests.integration.test_route_sessions import post, route
from tests.server.engine import needs_docker
from tests.server.servers import Server

pytestmark = [pytest.mark.server, needs_docker]


async def test_a_sync_process_and_two_api_replicas_share_everything(
    server: Server, embedders: EmbedderPool, tmp_path: Path
) -> None:
    synced = server.router("sync", "--catalog", EXAMPLES)
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout.splitlines() == [f"{ns}: {SUMMARY.format(n, 0, 0, 0)}" for ns, n in EXAMPLE_COUNTS.items()]

    async with (
        run_app(data=tmp_path / "a", pool=embedders, storage=server.open()) as first,
        run_app(data=tmp_path / "b", pool=embedders, storage=server.open()) as second,
    ):
        listed = (await second.client.get("/v1/catalogs")).json()["catalogs"]
        assert {c["namespace"]: c["count"] for c in listed} == EXAMPLE_COUNTS

        found = await route(first.client, "travel", "Find me flights from Lisbon to Rome next Friday")
        assert found["functions"][0]["name"] == "search_flights"
        await post(
            first.client,
            "trip",
            [
                {"role": "user", "content": "I am vegetarian. Find me flights from Lisbon to Rome next Friday"},
                {"role": "assistant", "content": "I found TP 840, AZ 201 and FR 123."},
            ],
            user_id="ana",
            namespace="travel",
        )

        # The other replica sees the session and the memory the first one stored.
        follow_up = await route(second.client, "travel", "Book TP 840 for John Smith", session_id="trip")
        meal = await route(second.client, "travel", "Which meal can I get on my flight?", user_id="ana")
        assert follow_up["functions"][0]["name"] == "book_flight"
        assert follow_up["history"][0]["content"].startswith("I am vegetarian")
        assert "vegetarian" in meal["memory_context"]

        # A catalog written through one replica is served by the other.
        put = await first.client.put("/v1/catalogs/weather", json={"functions": [WEATHER]})
        assert put.status_code == 200, put.text
        weather = await route(second.client, "weather", "Will it rain in Porto tomorrow?")
        assert weather["functions"][0]["name"] == "get_weather"

    again = server.router("sync", "--catalog", EXAMPLES)
    assert again.stdout.splitlines() == [f"{ns}: {SUMMARY.format(0, 0, 0, n)}" for ns, n in EXAMPLE_COUNTS.items()]


async def test_an_embedded_deployment_moves_to_the_server(
    server: Server, embedders: EmbedderPool, tmp_path: Path
) -> None:
    deployment = await migration.build(tmp_path / "data", embedders)
    expected = migration.stored_points(deployment.data)

    first = server.router("migrate", "--data", deployment.data, "--qdrant-url", server.url, "--batch", "16")
    again = server.router("migrate", "--data", deployment.data, "--qdrant-url", server.url)

    for run in (first, again):
        assert run.returncode == 0, run.stderr
        assert run.stdout.splitlines()[-1].endswith(f"to {server.url}; counts verified")
    assert first.stdout == again.stdout
    storage = server.open()
    migration.assert_same_points(expected, storage, server.prefix)
    async with run_app(data=tmp_path / "unused", pool=embedders, storage=storage) as served:
        migration.same_answers(await migration.answers(served.client), deployment.answers)
