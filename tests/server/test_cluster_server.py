"""The router on a three-node Qdrant cluster, wired as docker-compose.yml's ``cluster`` profile.

One node bootstraps the cluster and two join it through the peer-to-peer port; collections get
shards of two replicas each, writes wait for both replicas in leader order, and reads ask a
majority. Routers connected to different nodes see the same catalogs, sessions and memories.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient
from testcontainers.community.qdrant import QdrantContainer
from testcontainers.core.network import Network

from router.catalog.records import META
from router.embedding import EmbedderPool
from router.storage.cluster import ClusterOptions
from tests.conftest import EXAMPLES, QDRANT_IMAGE, run_app
from tests.integration import test_storage as shared
from tests.integration.test_replicas import share_everything
from tests.server.engine import needs_docker
from tests.server.servers import Server, rest_url, wait_ready

pytestmark = [pytest.mark.server, needs_docker]

NODES = 3
# Three shards keep the test's write-ahead logs small; docker-compose.yml defaults to six.
CLUSTER = ClusterOptions(
    shard_number=3,
    replication_factor=2,
    write_consistency_factor=2,
    write_ordering="medium",
    read_consistency="majority",
)
SETTINGS = {
    "ROUTER_STORAGE_SHARD_NUMBER": "3",
    "ROUTER_STORAGE_REPLICATION_FACTOR": "2",
    "ROUTER_STORAGE_WRITE_CONSISTENCY_FACTOR": "2",
    "ROUTER_STORAGE_WRITE_ORDERING": "medium",
    "ROUTER_STORAGE_READ_CONSISTENCY": "majority",
}


def node(network: Network, number: int) -> QdrantContainer:
    """Node 1 bootstraps the cluster; the others join it, each under its own peer address."""
    alias = f"qdrant-node-{number}"
    command = ["./qdrant", "--uri", f"http://{alias}:6335"]
    if number > 1:
        command += ["--bootstrap", "http://qdrant-node-1:6335"]
    container = QdrantContainer(image=QDRANT_IMAGE).with_network(network).with_network_aliases(alias)
    return container.with_env("QDRANT__CLUSTER__ENABLED", "true").with_command(command)


def wait_for_peers(url: str, count: int, *, timeout: float = 60) -> None:
    client = QdrantClient(url=url, check_compatibility=False)
    try:
        deadline = time.monotonic() + timeout
        while len(getattr(client.cluster_status(), "peers", {}) or {}) < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the cluster at {url} did not reach {count} peers within {timeout} s")
            time.sleep(0.5)
    finally:
        client.close()


@pytest.fixture(scope="module")
def nodes() -> Iterator[list[str]]:
    """The REST address of each node of a running three-node cluster."""
    with Network() as network:
        started: list[QdrantContainer] = []
        try:
            for number in range(1, NODES + 1):
                started.append(node(network, number).start())
                wait_ready(rest_url(started[-1]))
            urls = [rest_url(c) for c in started]
            wait_for_peers(urls[0], NODES)
            yield urls
        finally:
            for container in reversed(started):
                container.stop()


@pytest.fixture
def servers(nodes: list[str]) -> Iterator[list[Server]]:
    """The cluster seen through each of its nodes, under one prefix of this test's own."""
    prefix = f"t{uuid.uuid4().hex[:8]}_"
    views = [Server(url, prefix) for url in nodes]
    yield views
    for view in views[1:]:
        for storage in view.opened:
            storage.close()
    views[0].close()


def test_each_shard_has_two_replicas_on_distinct_nodes(servers: list[Server]) -> None:
    storage = servers[0].open(cluster=CLUSTER)
    spec = shared.make_spec()
    storage.collection(spec)
    storage.collection(META)
    client = storage.client

    params = client.get_collection(servers[0].prefix + spec.name).config.params
    info = client.collection_cluster_info(servers[0].prefix + spec.name)
    meta = client.get_collection(servers[0].prefix + META.name).config.params

    assert (params.shard_number, params.replication_factor, params.write_consistency_factor) == (3, 2, 2)
    replicas = [(s.shard_id, info.peer_id) for s in info.local_shards]
    replicas += [(s.shard_id, s.peer_id) for s in info.remote_shards]
    assert sorted(shard for shard, _ in replicas) == [0, 0, 1, 1, 2, 2]
    assert all(len({peer for shard, peer in replicas if shard == n}) == 2 for n in range(3))
    assert len({peer for _, peer in replicas}) == NODES
    assert (meta.shard_number, meta.replication_factor) == (1, 2)


def test_a_write_through_one_node_is_read_through_every_other(servers: list[Server]) -> None:
    spec = shared.make_spec()
    writer = servers[0].open(cluster=CLUSTER).collection(spec)
    writer.upsert([shared.point(n, [1, n, 0, 0], namespace=f"ns{n % 2}", seq=n) for n in range(40)])
    writer.delete([shared.pid(0)])

    for view in servers[1:]:
        reader = view.open(cluster=CLUSTER).collection(spec)
        assert reader.count() == 39
        assert reader.count({"namespace": "ns1"}) == 20
        assert [r.payload["seq"] for r in reader.scroll({"namespace": "ns0"}, order_by="seq")][:3] == [2, 4, 6]
        assert reader.search(dense=[1, 5, 0, 0], limit=1)[0].id == shared.pid(5)
        assert [r.payload["seq"] for r in reader.latest({"namespace": "ns1"}, order_by="seq", limit=2)] == [39, 37]


async def test_routers_on_different_nodes_share_one_cluster(
    servers: list[Server], embedders: EmbedderPool, tmp_path: Path
) -> None:
    synced = servers[0].router("sync", "--catalog", EXAMPLES, settings=SETTINGS)
    assert synced.returncode == 0, synced.stderr

    async with (
        run_app(data=tmp_path / "a", pool=embedders, storage=servers[1].open(cluster=CLUSTER)) as first,
        run_app(data=tmp_path / "b", pool=embedders, storage=servers[2].open(cluster=CLUSTER)) as second,
    ):
        await share_everything(first, second)
