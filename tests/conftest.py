"""Shared fixtures: one loaded model for the whole session, apps driven in-process, counting embedders.

Loading the model takes seconds, so every test that embeds shares the session's ``embedders``
pool; a runtime that is handed a pool never closes it. Tests that must prove *what* was
embedded wrap the real model in a ``CountingEmbedder``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from asgi_lifespan import LifespanManager
from fastapi import FastAPI

from router.app import create_app
from router.embedding import DEFAULT_MODEL, Embedder, EmbedderPool, Progress, Vectors
from router.retrieval.texts import DEFAULT_TEMPLATE
from router.server.backends import embedder_loader
from router.server.embedding_settings import EmbeddingSettings, MultilingualSettings
from router.server.runtime import Runtime
from router.server.settings import AuthSettings, LimitSettings, Settings, StorageSettings, SyncSettings
from router.storage.base import Storage

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# The server tests' fixtures (a Qdrant container, started only when a server test runs) and the
# test embedding service of the remote provider's tests.
pytest_plugins = ["tests.server.servers", "tests.embedding_server"]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "catalog"
EXAMPLE_COUNTS = {"commerce": 15, "devops": 16, "travel": 15, "workspace": 15}
# The Qdrant server of the server tests and of docker-compose.yml: within one minor version of
# qdrant-client (1.20), as qdrant-client requires.
QDRANT_IMAGE = "qdrant/qdrant:v1.19.1"


@pytest.fixture(autouse=True)
def _no_router_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the test, never from a developer's ``ROUTER_*`` variables."""
    for name in list(os.environ):
        if name.startswith("ROUTER_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="session")
def embedders() -> Iterator[EmbedderPool]:
    """The real model pool, loaded once and shared by every test."""
    pool = EmbedderPool(embedder_loader(EmbeddingSettings()))
    yield pool
    pool.close()


@pytest.fixture(scope="session")
async def embedder(embedders: EmbedderPool) -> Embedder:
    """The default model, loaded."""
    return await embedders.get(DEFAULT_MODEL)


@dataclass
class Hold:
    """Pauses the embed calls whose texts satisfy ``when`` until ``release``."""

    when: Callable[[list[str]], bool]
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    released: asyncio.Event = field(default_factory=asyncio.Event)

    def release(self) -> None:
        self.released.set()


class CountingEmbedder:
    """The real model behind the ``Embedder`` interface, recording the texts it is asked to embed.

    ``embed`` and ``encode`` (documents) are recorded, the facets of functions apart
    (``facet_calls``); anything else (query paths, attributes) goes straight to the real
    embedder. Closing it leaves the shared model loaded.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_name = inner.model_name
        self.dimension = inner.dimension
        self.calls: list[list[str]] = []
        self.facet_calls: list[list[str]] = []
        self.hold: Hold | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def embedded(self) -> int:
        """How many texts were embedded in all."""
        return sum(len(c) for c in self.calls)

    def texts(self) -> list[str]:
        """Every text embedded, in order."""
        return [t for c in self.calls for t in c]

    def reset(self) -> None:
        self.calls.clear()
        self.facet_calls.clear()

    def pause(self, when: Callable[[list[str]], bool]) -> Hold:
        """Make the embed calls matching ``when`` wait until the returned hold is released."""
        self.hold = Hold(when)
        return self.hold

    async def embed(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        batch = list(texts)
        hold = self.hold
        if hold is not None and hold.when(batch):
            hold.reached.set()
            await hold.released.wait()
        (self.facet_calls if kind == "facet" else self.calls).append(batch)
        return await self.inner.embed(batch, progress=progress, kind=kind)

    def encode(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        self.calls.append(list(texts))
        return self.inner.encode(texts, progress=progress, kind=kind)

    def close(self) -> None:
        pass


@pytest.fixture
def counting(embedder: Embedder) -> CountingEmbedder:
    """A fresh counter around the session's model."""
    return CountingEmbedder(embedder)


@pytest.fixture
def counting_pool(counting: CountingEmbedder) -> EmbedderPool:
    """A pool whose every model is the counting embedder."""
    return EmbedderPool(lambda _model: counting)


@dataclass
class Served:
    """An app running in-process with its runtime and an HTTP client."""

    app: FastAPI
    runtime: Runtime
    client: httpx.AsyncClient
    data: Path


@asynccontextmanager
async def run_app(
    *,
    data: Path,
    pool: EmbedderPool,
    catalog: Path | None = None,
    text: str = DEFAULT_TEMPLATE,
    allow_delete: bool = False,
    ready: bool = True,
    auth: AuthSettings | None = None,
    limits: LimitSettings | None = None,
    storage: Storage | None = None,
    multilingual: MultilingualSettings | None = None,
    model: str | None = None,
) -> AsyncIterator[Served]:
    """Run the app with its lifespan on ``data``; wait until ready unless ``ready=False``.

    With ``storage`` (left open) the app runs in server mode on it instead, as an API replica would.
    """
    where = StorageSettings(data=data) if storage is None else StorageSettings(qdrant_url=storage.location)
    settings = Settings(
        embedding=EmbeddingSettings(text=text) if model is None else EmbeddingSettings(text=text, model=model),
        storage=where,
        sync=SyncSettings(catalog=catalog, allow_delete=allow_delete),
        auth=auth,
        limits=limits,
        multilingual=multilingual,
    )
    runtime = Runtime(settings, storage=storage, embedders=pool)
    app = create_app(runtime=runtime)
    async with (
        LifespanManager(app, startup_timeout=60, shutdown_timeout=30),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client,
    ):
        if ready:
            async with asyncio.timeout(60):
                await runtime.wait_ready()
        yield Served(app, runtime, client, data)


@pytest.fixture
def serve(tmp_path: Path, embedders: EmbedderPool) -> Callable[..., Any]:
    """``run_app`` on ``tmp_path / "data"`` with the session's model (both can be overridden).

    Usage: ``async with serve(catalog=dir) as served: await served.client.get(...)``.
    """
    return functools.partial(run_app, data=tmp_path / "data", pool=embedders)


@pytest.fixture
def catalog_dir(tmp_path: Path) -> Path:
    """An empty catalog directory."""
    path = tmp_path / "catalog"
    path.mkdir()
    return path


@pytest.fixture
def examples_dir(tmp_path: Path) -> Path:
    """A private copy of the example catalog."""
    return Path(shutil.copytree(EXAMPLES, tmp_path / "examples"))


def write_catalog(directory: Path, namespace: str, functions: Any, *, suffix: str = ".json") -> Path:
    """Write a catalog file (JSON unless the suffix says YAML) and return its path."""
    path = directory / f"{namespace}{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(functions, indent=2))
    else:
        path.write_text(yaml.safe_dump(functions))
    return path


@contextmanager
def writes_cut_short(store: Any) -> Iterator[None]:
    """Each upsert of ``store`` (a function store) writes its points, then fails as a full disk would."""
    written = store.upsert

    def half_written(namespace: str, functions: Any, vectors: Any, facets: Any) -> None:
        written(namespace, functions, vectors, facets)
        raise OSError("disk full")

    store.upsert = half_written
    try:
        yield
    finally:
        del store.upsert


def bare(name: str, description: str = "", **properties: str) -> dict[str, Any]:
    """A bare-shape definition whose properties are strings described by the keyword values."""
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {p: {"type": "string", "description": d} for p, d in properties.items()},
            "required": list(properties),
        },
    }


WEATHER = bare("get_weather", "Current weather conditions for a city.", city="City name")
STOCKS = bare("get_stock_price", "Latest trading price of a stock ticker.", ticker="Ticker symbol")
TIMEZONE = bare("get_local_time", "Current local time in a time zone.", zone="IANA time zone")


async def eventually(check: Callable[[], Awaitable[bool]], *, within: float = 2.0, step: float = 0.02) -> float:
    """Poll ``check`` until it holds; return the seconds it took, fail after ``within`` seconds.

    Two seconds by default: what a catalog edit may take to show (the worker debounces 200 ms).
    """
    start = time.monotonic()
    while not await check():
        elapsed = time.monotonic() - start
        assert elapsed < within, f"not reflected after {elapsed:.2f}s"
        await asyncio.sleep(step)
    return time.monotonic() - start


ROUTER = Path(sys.executable).with_name("router")


def router_environment() -> dict[str, str]:
    """The environment of a ``router`` process (the autouse fixture already removed every ``ROUTER_*``)."""
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def free_port() -> int:
    """A port nothing listens on at 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class RouterProcess:
    """A ``router serve`` process on 127.0.0.1, its output going to ``log``."""

    process: subprocess.Popen[str]
    url: str
    data: Path
    log: Path

    def wait_ready(self, *, timeout: float = 120) -> None:
        """Poll ``/readyz`` until it answers 200; fail if the process exits or time runs out."""
        deadline = time.monotonic() + timeout
        while True:
            assert self.process.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, f"router serve did not become ready:\n{self.log.read_text()}"
            try:
                if httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_router(*args: str | Path, data: Path, log: Path, env: dict[str, str] | None = None) -> RouterProcess:
    """Spawn ``router serve --data DATA --port <free> ARGS...`` (not waiting for readiness)."""
    port = free_port()
    command = [str(ROUTER), "serve", "--data", str(data), "--port", str(port), *map(str, args)]
    with log.open("a") as output:
        process = subprocess.Popen(
            command, stdout=output, stderr=subprocess.STDOUT, text=True, env={**router_environment(), **(env or {})}
        )
    return RouterProcess(process, f"http://127.0.0.1:{port}", data, log)


_VERBS = ["get", "list", "create", "update", "archive", "export", "approve", "schedule"]
_THINGS = ["invoice", "ticket", "shipment", "contract", "sensor", "playlist", "badge", "meeting", "vendor", "lease"]
_PLACES = ["north", "south", "harbour", "central", "mountain"]


def large_catalog(size: int) -> list[dict[str, Any]]:
    """``size`` distinct, valid functions with short texts (quick to embed); the same for the same size."""
    functions = []
    for i in range(size):
        verb, thing, place = _VERBS[i % 8], _THINGS[i // 8 % 10], _PLACES[i // 80 % 5]
        functions.append({
            "name": f"{verb}_{thing}_{i:05d}",
            "description": f"{verb.capitalize()} {thing} number {i} of the {place} office.",
            "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        })  # fmt: skip
    return functions
