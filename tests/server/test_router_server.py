"""The router on a real Qdrant server: a sync worker process, two API replicas, and a migration.

This is docker-compose.yml's topology without the images: ``router sync`` as its own process,
API replicas that hold nothing of their own, and ``router migrate`` from an embedded deployment.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from qdrant_client import models

from router.embedding import EmbedderPool
from router.storage.edge_export import collection_names
from tests.conftest import EXAMPLE_COUNTS, EXAMPLES, run_app
from tests.integration import test_migrate as migration
from tests.integration.test_cli import SUMMARY
from tests.integration.test_replicas import share_everything
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
        await share_everything(first, second)

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


def test_a_migration_the_server_refuses_says_why(server: Server, tmp_path: Path) -> None:
    data = tmp_path / "data"
    synced = server.router("sync", "--catalog", EXAMPLES, "--data", data, settings={"ROUTER_STORAGE_QDRANT_URL": ""})
    assert synced.returncode == 0, synced.stderr
    (functions,) = [name for name in collection_names(data) if name.startswith("functions-")]
    # A collection of that name already on the server, made for another model's vectors.
    other = {"dense": models.VectorParams(size=8, distance=models.Distance.COSINE)}
    server.open().client.create_collection(server.prefix + functions, vectors_config=other)

    result = server.router("migrate", "--data", data, "--qdrant-url", server.url)

    assert result.returncode == 3
    assert f"router migrate: {server.url} refused (400)" in result.stderr
    assert "Traceback" not in result.stderr
