"""Fixtures of the server tests: a real Qdrant server in Docker (testcontainers), one per session.

Registered as a plugin by ``tests/conftest.py``; nothing starts unless a server test asks for it.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from qdrant_client import QdrantClient
from testcontainers.community.qdrant import QdrantContainer

from router.storage.client import ClientStorage
from router.storage.cluster import ClusterOptions
from tests.conftest import QDRANT_IMAGE


def wait_ready(url: str, *, timeout: float = 60) -> None:
    """Wait until the Qdrant node at ``url`` answers ``/readyz`` with 200."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"Qdrant at {url} did not become ready within {timeout} s")
        time.sleep(0.2)


def rest_url(container: QdrantContainer) -> str:
    """The container's REST address as seen from the tests."""
    return f"http://{container.get_container_host_ip()}:{container.exposed_rest_port}"


@pytest.fixture(scope="session")
def qdrant_url() -> Iterator[str]:
    """One single-node Qdrant server for the session; tests keep apart by collection prefix."""
    with QdrantContainer(image=QDRANT_IMAGE) as container:
        url = rest_url(container)
        wait_ready(url)
        yield url


@dataclass
class Server:
    """A Qdrant server and a collection prefix of one test's own; opens storages on them."""

    url: str
    prefix: str = field(default_factory=lambda: f"t{uuid.uuid4().hex[:8]}_")
    opened: list[ClientStorage] = field(default_factory=list)

    def open(self, *, cluster: ClusterOptions | None = None) -> ClientStorage:
        """A new storage (client) on the server, closed at the end of the test."""
        self.opened.append(ClientStorage.from_url(self.url, prefix=self.prefix, cluster=cluster))
        return self.opened[-1]

    def environment(self) -> dict[str, str]:
        """What a ``router`` process needs to use the same server and prefix."""
        return {"ROUTER_STORAGE_QDRANT_URL": self.url, "ROUTER_STORAGE_PREFIX": self.prefix}

    def router(self, *args: str | Path, settings: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run the ``router`` command on this server and prefix, with more ``ROUTER_*`` settings if given."""
        from tests.integration.test_cli import ROUTER, environment

        return subprocess.run(
            [str(ROUTER), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=300,
            env={**environment(), **self.environment(), **(settings or {})},
            check=False,
        )

    def close(self) -> None:
        """Close every storage and drop the test's collections (each shard holds a WAL of tens of MB)."""
        for storage in self.opened:
            storage.close()
        client = QdrantClient(url=self.url, check_compatibility=False)
        try:
            for collection in client.get_collections().collections:
                if collection.name.startswith(self.prefix):
                    client.delete_collection(collection.name)
        finally:
            client.close()


@pytest.fixture
def server(qdrant_url: str) -> Iterator[Server]:
    """The session's server under a prefix of this test's own."""
    opened = Server(qdrant_url)
    yield opened
    opened.close()


Connect = Callable[..., ClientStorage]


@pytest.fixture
def connect(server: Server) -> Connect:
    """Opens storages on the server under this test's prefix (``cluster=`` options allowed)."""
    return server.open
