"""``router mcp`` against real MCP clients: stdio, streamable HTTP, an upstream MCP server, a remote router.

The commands, the client configuration, the Python example and the upstreams file come from
``docs/integrations.md`` (blocks marked ``<!-- test: NAME -->``), so the documentation runs as written,
with a temporary data directory, free ports, and a catalog directory holding only the
example ``travel`` catalog (embedding the four example catalogs would take most of each
test). ``router mcp`` runs as ``python -m router.cli mcp``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import socket
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
import yaml
from conftest import EXAMPLES, ROOT
from mcp import Client, ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from router.app import create_app
from router.catalog.functions import FunctionDef
from router.catalog.records import MetaStore
from router.cli import main as cli_main
from router.common.errors import CatalogInvalid, NamespaceNotFound, RouterError
from router.embedding import EmbedderPool
from router.mcp.backends import EmbeddedBackend, Found, WorkingSet
from router.mcp.config import ConfigError, load_upstreams, parse_upstream
from router.mcp.server import ToolRouterServer
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from router.storage.edge import EdgeStorage
from sync.mcp_source import McpSources
from sync.upstream import UpstreamConfig
from tests.docs import marked

pytestmark = pytest.mark.integration

DOCS = ROOT / "docs" / "integrations.md"
FIXTURE = ROOT / "tests" / "integration" / "mcp_fixture_server.py"
FLIGHTS = "find me a flight from Lisbon to Rome"


def router_mcp() -> list[str]:
    """How to run ``router mcp`` from this checkout."""
    return [sys.executable, "-m", "router.cli", "mcp"]


def command(argv: list[str], **values: str) -> list[str]:
    """A documented ``router mcp`` command line, runnable here: flag values replaced, ``python`` made this one."""
    assert argv[:2] == ["router", "mcp"], argv
    args = argv[2:]
    for flag, value in values.items():
        option = f"--{flag.replace('_', '-')}"
        if option in args:
            args[args.index(option) + 1] = value
        else:
            args += [option, value]
    args = [a.replace("=python ", f"={shlex.quote(sys.executable)} ") for a in args]
    return [*router_mcp(), *args]


@pytest.fixture
def travel(tmp_path: Path) -> Path:
    """A catalog directory with the example ``travel.json`` only."""
    directory = tmp_path / "catalog"
    directory.mkdir()
    shutil.copy(EXAMPLES / "travel.json", directory)
    return directory


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Changes:
    """Counts ``notifications/tools/list_changed``; the session's ``message_handler``."""

    def __init__(self) -> None:
        self.count = 0
        self.event = asyncio.Event()

    async def __call__(self, message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self.event.set()

    async def wait(self) -> None:
        async with asyncio.timeout(10):
            await self.event.wait()
        self.event.clear()


@asynccontextmanager
async def stdio_session(argv: list[str], log: Path) -> AsyncIterator[tuple[ClientSession, Changes]]:
    """A client session with ``router mcp`` started over stdio (its stderr in ``log``)."""
    changes = Changes()
    server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=ROOT)
    with log.open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=changes) as session,
        ):
            async with asyncio.timeout(120):
                await session.initialize()
            yield session, changes


async def find(session: ClientSession, query: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool("find_tools", {"query": query, **arguments})
    assert not result.is_error, result.content
    assert json.loads(text(result)) == result.structured_content
    answer: dict[str, Any] = result.structured_content
    return answer


async def tool_names(session: ClientSession) -> list[str]:
    return [t.name for t in (await session.list_tools()).tools]


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def until(check: Callable[[], Any], *, seconds: float = 15) -> Any:
    """Poll the coroutine function ``check`` until it returns something truthy."""
    async with asyncio.timeout(seconds):
        while not (value := await check()):  # noqa: ASYNC110 - the state is in another process
            await asyncio.sleep(0.2)
    return value


async def test_stdio_find_tools_builds_the_session_working_set(tmp_path: Path, travel: Path) -> None:
    config = json.loads(marked(DOCS, "client-config"))["mcpServers"]["tool-router"]
    argv = command([config["command"], *config["args"]], data=str(tmp_path / "data"), catalog=str(travel))
    async with stdio_session(argv, tmp_path / "router.log") as (session, changes):
        assert session.initialize_result is not None
        assert session.initialize_result.capabilities.tools is not None
        assert session.initialize_result.capabilities.tools.list_changed is True
        assert await tool_names(session) == ["find_tools"]

        answer = await find(session, FLIGHTS)
        documented = json.loads(marked(DOCS, "find-tools-answer"))
        assert set(answer) == set(documented)
        assert set(answer["functions"][0]) == set(documented["functions"][0])
        flight = next(f for f in answer["functions"] if f["name"] == "search_flights")
        assert (flight["namespace"], flight["callable"], flight["pinned"]) == ("travel", False, False)
        scores = [f["score"] for f in answer["functions"]]
        assert scores == sorted(scores, reverse=True)
        assert len(answer["functions"]) == 3
        await changes.wait()
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == answer["tools"] == ["find_tools", *[f["name"] for f in answer["functions"]]]
        catalog = json.loads((EXAMPLES / "travel.json").read_text())["functions"]
        verbatim = next(f["function"]["parameters"] for f in catalog if f["function"]["name"] == "search_flights")
        assert next(t for t in listed if t.name == "search_flights").input_schema == verbatim

        # Found again: nothing changes, nothing is notified.
        await find(session, FLIGHTS)
        await asyncio.sleep(0.3)
        assert changes.count == 1
        visa = (await find(session, "do I need a visa to visit Brazil", max_functions=1))["functions"][0]["name"]
        assert visa not in answer["tools"]
        await changes.wait()
        assert await tool_names(session) == ["find_tools", visa, *answer["tools"][1:]]

        refused = await session.call_tool("search_flights", {"origin": "LIS", "destination": "FCO"})
        assert refused.is_error
        assert "no executor" in text(refused)
        with pytest.raises(MCPError, match="Unknown tool") as unknown:
            await session.call_tool("book_flight", {})
        assert unknown.value.code == types.INVALID_PARAMS
        for bad in ({"query": " "}, {"query": "flights", "max_functions": 0}, {"query": "x", "max_functions": True}):
            result = await session.call_tool("find_tools", bad)
            assert result.is_error, bad
        result = await session.call_tool("find_tools", {"query": "hotel", "namespace": "commerce"})
        assert result.is_error
        assert text(result) == "find_tools: unexpected arguments ['namespace']; it takes 'query' and 'max_functions'"


async def test_stdio_answers_a_line_that_is_no_message_and_serves_on(tmp_path: Path, travel: Path) -> None:
    argv = command(["router", "mcp", "--namespace", "travel"], data=str(tmp_path / "data"), catalog=str(travel))
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=ROOT, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    stdin, stdout, stderr = process.stdin, process.stdout, process.stderr
    assert stdin is not None
    assert stdout is not None
    assert stderr is not None

    async def ask(line: str) -> dict[str, Any]:
        stdin.write(line.encode() + b"\n")
        await stdin.drain()
        answer: dict[str, Any] = json.loads(await asyncio.wait_for(stdout.readline(), 120))
        return answer

    try:
        unparsed = await ask('{"jsonrpc": "2.0", "id": 1, "method": "tools/list"')
        assert unparsed["id"] is None
        assert unparsed["error"]["code"] == types.PARSE_ERROR
        misspelt = await ask('{"jsonrpc": "2.0", "id": 7, "mehtod": "tools/list"}')
        assert misspelt["id"] == 7
        assert misspelt["error"]["code"] == types.INVALID_REQUEST
        nested = await ask("[" * 100_000)
        assert nested["error"]["code"] == types.PARSE_ERROR
        # A response of the client's that is not valid gets no answer: it would read as one to request 0.
        stdin.write(b'{"jsonrpc": "2.0", "id": 0, "result": null}\n')
        hello = {"protocolVersion": HANDSHAKE_PROTOCOL_VERSIONS[-1], "capabilities": {}}
        hello["clientInfo"] = {"name": "test", "version": "1"}
        started = await ask(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "initialize", "params": hello}))
        assert started["id"] == 8
        assert started["result"]["capabilities"]["tools"]
    finally:
        stdin.close()
        await asyncio.wait_for(process.wait(), 60)
    assert b"MCP message not understood" in await stderr.read()


async def test_the_documented_python_client_runs(tmp_path: Path, travel: Path) -> None:
    prefix = router_mcp()
    script = marked(DOCS, "python-client").replace(
        'command="router", args=["mcp",', f"command={prefix[0]!r}, args=[*{prefix[1:]!r},"
    )
    script = script.replace('"--data", "data-mcp"', f'"--data", {str(tmp_path / "data")!r}')
    script = script.replace('"examples/catalog"', repr(str(travel)))
    (tmp_path / "client.py").write_text(script)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(tmp_path / "client.py"),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-3000:]
    # As documented, with the default model and settings (scores to within a CPU's rounding).
    *functions, tools = out.decode().splitlines()
    *documented, documented_tools = marked(DOCS, "python-client-output").splitlines()
    assert all(re.fullmatch(r"[a-z_]+ -?\d+\.\d+", line) for line in [*functions, *documented])
    assert [line.split()[0] for line in functions] == [line.split()[0] for line in documented]
    scores = [(float(a.split()[1]), float(b.split()[1])) for a, b in zip(functions, documented, strict=True)]
    assert all(abs(printed - shown) < 0.002 for printed, shown in scores)
    assert tools == documented_tools


async def test_streamable_http_keeps_one_working_set_per_session(tmp_path: Path, travel: Path) -> None:
    port = free_port()
    argv = command(shlex.split(marked(DOCS, "http")), port=str(port), data=str(tmp_path / "data"), catalog=str(travel))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROUTER_")}
    with (tmp_path / "router.log").open("w") as log:
        process = await asyncio.create_subprocess_exec(*argv, cwd=ROOT, env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}/mcp"
    try:

        async def up() -> bool:
            assert process.returncode is None, (tmp_path / "router.log").read_text()
            try:
                async with httpx.AsyncClient() as http:
                    await http.get(url)
            except httpx.TransportError:
                return False
            return True

        await until(up, seconds=60)
        changes = Changes()
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, message_handler=changes) as first,
            Client(url) as second,
        ):
            await first.initialize()
            # The SDK's Client probes for the stateless 2026 era and falls back to a session.
            assert second.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            flights = await find(first, FLIGHTS)
            await changes.wait()
            assert "search_flights" in await tool_names(first)
            assert [t.name for t in (await second.list_tools()).tools] == ["find_tools"]
            hotel = await second.call_tool("find_tools", {"query": "cancel my hotel reservation", "max_functions": 1})
            hotel_name = hotel.structured_content["functions"][0]["name"]
            assert [t.name for t in (await second.list_tools()).tools] == ["find_tools", hotel_name]
            assert await tool_names(first) == flights["tools"]
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), 30) == 0, (tmp_path / "router.log").read_text()


async def test_an_upstream_mcp_server_becomes_a_callable_catalog(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = command(shlex.split(marked(DOCS, "upstream")), data=str(data))
    async with stdio_session(argv, tmp_path / "router.log") as (session, changes):
        weather = await find(session, "what will the weather be like in Lisbon this week", max_functions=10)
        names = [f["name"] for f in weather["functions"]]
        assert sorted(names) == ["convert_currency", "get_forecast", "open_beta", "translate_phrase"]
        assert all(f["namespace"] == "desk" and f["callable"] for f in weather["functions"])
        await changes.wait()

        forecast = await session.call_tool("get_forecast", {"city": "Lisbon", "days": 2})
        assert not forecast.is_error
        assert text(forecast) == "Forecast for Lisbon: sunny, 24 C, light wind, for the next 2 days."
        table = "reserve a table for four at a restaurant"
        assert "book_table" not in [f["name"] for f in (await find(session, table))["functions"]]

        # The upstream adds a tool and notifies: the namespace follows (re-listing every 300 s could not).
        assert text(await session.call_tool("open_beta", {})) == "Beta tools unlocked: book_table."

        async def booked() -> bool:
            return "book_table" in [f["name"] for f in (await find(session, table))["functions"]]

        await until(booked)
        booking = await session.call_tool("book_table", {"restaurant": "Tasca", "people": 4, "time": "20:00"})
        assert text(booking) == "Table for 4 at Tasca at 20:00: confirmed."
    storage = EdgeStorage(data)
    try:
        record = MetaStore.open(storage).catalog("desk")
        assert record is not None
        assert (record.source, record.count) == ("mcp:desk", 5)
    finally:
        storage.close()


class LiveRouter:
    """``router serve`` in-process on a free 127.0.0.1 port, sharing the session's model."""

    def __init__(self, root: Path, catalog: Path, embedders: EmbedderPool) -> None:
        settings = Settings(storage=StorageSettings(data=root / "api-data"), sync=SyncSettings(catalog=catalog))
        app = create_app(runtime=Runtime(settings, embedders=embedders))
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    def __enter__(self) -> LiveRouter:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.socket.close()


@pytest.fixture
def live_router(tmp_path: Path, travel: Path, embedders: EmbedderPool) -> Iterator[LiveRouter]:
    with LiveRouter(tmp_path, travel, embedders) as live:
        yield live


@asynccontextmanager
async def http_fixture(
    log: Path, *, prefix: str = "", port: int | None = None, flags: Sequence[str] = ()
) -> AsyncIterator[str]:
    """The fixture MCP server on streamable HTTP, its tools prefixed; yields its URL."""
    port = port or free_port()
    argv = [sys.executable, str(FIXTURE), "--http", str(port), "--prefix", prefix, *flags]
    with log.open("w") as out:
        process = await asyncio.create_subprocess_exec(*argv, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await until(lambda: answers(url), seconds=30)
        yield url
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), 30)


async def answers(url: str) -> bool:
    try:
        async with httpx.AsyncClient() as http:
            await http.get(url)
    except httpx.TransportError:
        return False
    return True


async def test_through_a_running_router_with_an_upstreams_file(tmp_path: Path, live_router: LiveRouter) -> None:
    async with (
        httpx.AsyncClient(base_url=live_router.url) as http,
        http_fixture(tmp_path / "web.log", prefix="web_") as web,
    ):

        async def ready() -> bool:
            try:
                return (await http.get("/readyz")).status_code == 200
            except httpx.TransportError:
                return False

        await until(ready, seconds=120)
        upstreams = yaml.safe_load(marked(DOCS, "upstreams-file"))
        desk = upstreams["upstreams"]["desk"] | {"command": sys.executable, "resync_seconds": 1}
        (tmp_path / "upstreams.yaml").write_text(yaml.safe_dump({"upstreams": {"desk": desk}}))
        serve, mcp = (shlex.split(line.split("#")[0]) for line in marked(DOCS, "remote").splitlines())
        assert serve[:2] == ["router", "serve"]
        argv = command(mcp, url=live_router.url, upstreams=str(tmp_path / "upstreams.yaml"), upstream=f"web={web}")
        async with stdio_session(argv, tmp_path / "router.log") as (session, _):
            flights = await find(session, FLIGHTS)
            assert ("search_flights", "travel", False) in [
                (f["name"], f["namespace"], f["callable"]) for f in flights["functions"]
            ]
            weather = await find(session, "weather forecast for Lisbon", max_functions=4)
            found_here = {(f["name"], f["namespace"], f["callable"]) for f in weather["functions"]}
            assert {("get_forecast", "desk", True), ("web_get_forecast", "web", True)} <= found_here
            assert text(await session.call_tool("get_forecast", {"city": "Rome"})).startswith("Forecast for Rome")
            assert text(await session.call_tool("web_get_forecast", {"city": "Oslo"})).startswith("Forecast for Oslo")

            stored = (await http.get("/v1/catalogs/desk")).json()
            assert sorted(f["name"] for f in stored["functions"]) == sorted(
                ["convert_currency", "get_forecast", "open_beta", "translate_phrase"]
            )
            assert all("inputSchema" in f for f in stored["functions"])

            # No notification this time: the one-second re-listing picks the new tool up.
            await find(session, "unlock the beta tools", max_functions=10)
            assert text(await session.call_tool("open_beta", {"notify": False})).startswith("Beta tools unlocked")

            async def listed() -> bool:
                names = [f["name"] for f in (await http.get("/v1/catalogs/desk")).json()["functions"]]
                return "book_table" in names

            await until(listed)
            table = await find(session, "reserve a table for four at a restaurant")
            assert "book_table" in [f["name"] for f in table["functions"]]


async def test_an_http_upstream_that_restarts_is_called_again_at_once(tmp_path: Path, embedders: EmbedderPool) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"))
    backend = EmbeddedBackend(settings, runtime=Runtime(settings, embedders=embedders))
    port = free_port()
    await backend.start()
    sources = McpSources([], backend)
    try:
        async with http_fixture(tmp_path / "web.log", port=port) as url:
            sources = McpSources([UpstreamConfig("web", url=url)], backend)  # listed again every 300 s
            await sources.start()
            (web,) = sources.sources
            assert not (await web.call("get_forecast", {"city": "Rome"})).is_error
        async with http_fixture(tmp_path / "web-again.log", port=port):
            # Its session went with the process: the call says so, and the next ones reach the new one.
            assert (await web.call("get_forecast", {"city": "Rome"})).is_error

            async def answered() -> bool:
                return text(await web.call("get_forecast", {"city": "Oslo"})).startswith("Forecast for Oslo")

            await until(answered, seconds=30)
    finally:
        await sources.stop()
        await backend.stop()


async def test_a_call_that_times_out_keeps_the_upstream_session(tmp_path: Path) -> None:
    # Pinging a server still busy with the call timed out too, and the upstream was reconnected.
    sink = RefusingSink(refuse=False)
    async with http_fixture(tmp_path / "web.log", flags=["--stalling"]) as url:
        sources = McpSources([UpstreamConfig("web", url=url, timeout_seconds=1)], sink)
        await sources.start()
        (web,) = sources.sources
        session = web._session
        assert session is not None
        assert (await web.call("stall", {"seconds": 3})).is_error
        await asyncio.sleep(3)
        assert (web._session, sink.attempts) == (session, 1)
        await sources.stop()


async def test_a_forwarded_result_keeps_its_meta(tmp_path: Path) -> None:
    sink = RefusingSink(refuse=False)
    async with http_fixture(tmp_path / "web.log", flags=["--traced"]) as url:
        sources = McpSources([UpstreamConfig("web", url=url)], sink)
        await sources.start()
        result = await sources.sources[0].call("traced", {"trace": "t-42"})
        await sources.stop()
    assert (text(result), result.meta) == ("traced", {"example/trace": "t-42"})


class RefusingSink:
    """A router that refuses every catalog (over its function limit, say), counting the attempts."""

    def __init__(self, *, refuse: bool = True) -> None:
        self.attempts = 0
        self.refuse = refuse

    async def apply(self, namespace: str, functions: Sequence[FunctionDef], *, source: str) -> object:
        self.attempts += 1
        if self.refuse:
            raise CatalogInvalid(f"{namespace}: {len(functions)} functions, at most 2 ({source})")
        return None


async def test_an_upstream_whose_catalog_is_refused_is_tried_again_ever_later(tmp_path: Path) -> None:
    # Connecting succeeded each time, which restarted the backoff: a stdio upstream was respawned every second.
    sink = RefusingSink()
    async with http_fixture(tmp_path / "web.log") as url:
        sources = McpSources([UpstreamConfig("web", url=url)], sink)
        await sources.start()
        await asyncio.sleep(8)
        await sources.stop()
    # Tries at 0, 1, 3 and 7 s; without backoff, one a second or so.
    assert 3 <= sink.attempts <= 4, sink.attempts
    assert sources.sources[0].failure is not None


async def test_two_upstreams_with_the_same_tool_names_keep_both(tmp_path: Path, embedders: EmbedderPool) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"))
    backend = EmbeddedBackend(settings, runtime=Runtime(settings, embedders=embedders))
    upstreams = [
        UpstreamConfig(name, command=sys.executable, args=(str(FIXTURE), "--label", name)) for name in ("desk", "web")
    ]
    sources = McpSources(upstreams, backend)
    router = ToolRouterServer(backend, ["desk", "web"], sources=sources)
    await backend.start()
    try:
        await sources.start()
        async with Client(router.server, mode="legacy") as client:
            result = await client.call_tool("find_tools", {"query": "weather forecast for Lisbon", "max_functions": 2})
            answer = result.structured_content
            assert answer is not None
            found = {(f["namespace"], f["name"], f["tool"], f["callable"]) for f in answer["functions"]}
            assert found == {
                ("desk", "get_forecast", "desk__get_forecast", True),
                ("web", "get_forecast", "web__get_forecast", True),
            }
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == answer["tools"]
            assert {"desk__get_forecast", "web__get_forecast"} <= {t.name for t in listed}
            for name in ("desk", "web"):
                called = await client.call_tool(f"{name}__get_forecast", {"city": "Rome"})
                assert text(called).endswith(f"(from {name})"), text(called)
            with pytest.raises(MCPError, match="desk__get_forecast") as ambiguous:
                await client.call_tool("get_forecast", {"city": "Rome"})
            assert ambiguous.value.code == types.INVALID_PARAMS

            # A name that one function of the session holds stays as it is.
            await client.call_tool("find_tools", {"query": "translate a phrase into Italian", "max_functions": 1})
            assert "translate_phrase" in [t.name for t in (await client.list_tools()).tools]
    finally:
        await sources.stop()
        await backend.stop()


async def test_a_found_function_past_the_working_set_is_not_callable(tmp_path: Path, embedders: EmbedderPool) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"))
    backend = EmbeddedBackend(settings, runtime=Runtime(settings, embedders=embedders))
    sources = McpSources([UpstreamConfig("desk", command=sys.executable, args=(str(FIXTURE),))], backend)
    router = ToolRouterServer(backend, ["desk"], sources=sources, working_set=1)
    await backend.start()
    try:
        await sources.start()
        async with Client(router.server, mode="legacy") as client:
            result = await client.call_tool("find_tools", {"query": "weather forecast for Lisbon", "max_functions": 2})
            answer = result.structured_content
            assert answer is not None
            found = [(f["name"], f["callable"]) for f in answer["functions"]]
            # The session keeps one found tool: only that one can be called.
            assert found == [(found[0][0], True), (found[1][0], False)]
            assert answer["tools"] == ["find_tools", found[0][0]]
    finally:
        await sources.stop()
        await backend.stop()


async def test_an_upstream_that_lists_no_tools_keeps_its_catalog(tmp_path: Path, embedders: EmbedderPool) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"))
    backend = EmbeddedBackend(settings, runtime=Runtime(settings, embedders=embedders))
    upstreams = [
        UpstreamConfig("desk", command=sys.executable, args=(str(FIXTURE), "--closable")),
        UpstreamConfig("bare", command=sys.executable, args=(str(FIXTURE), "--empty")),
    ]
    sources = McpSources(upstreams, backend)
    router = ToolRouterServer(backend, ["desk"], sources=sources)
    await backend.start()
    try:
        await sources.start()
        # One that has never listed a tool is a catalog of none: searching it answers nothing, not an error.
        async with Client(ToolRouterServer(backend, ["bare"], sources=sources).server, mode="legacy") as client:
            bare = sources.sources[1]
            await until(lambda: asyncio.sleep(0, bare.syncs))
            result = await client.call_tool("find_tools", {"query": "weather forecast for Lisbon"})
            assert not result.is_error, text(result)
            assert result.structured_content is not None
            assert result.structured_content["functions"] == []
        async with Client(router.server, mode="legacy") as client:
            await client.call_tool("find_tools", {"query": "close the travel desk", "max_functions": 5})
            source = sources.sources[0]
            listings = source.syncs
            assert text(await client.call_tool("close_desk", {})) == "Desk closed."

            async def listed_again() -> bool:
                return source.syncs > listings

            await until(listed_again)
            # A server restarting, or broken, lists nothing for a while: what it taught must not go with it.
            assert backend.runtime.catalogs.known("desk").count == 5
            result = await client.call_tool("find_tools", {"query": "weather forecast for Lisbon", "max_functions": 1})
            assert result.structured_content is not None
            assert [f["name"] for f in result.structured_content["functions"]] == ["get_forecast"]
    finally:
        await sources.stop()
        await backend.stop()


async def test_an_upstream_that_cannot_start_says_why(tmp_path: Path, embedders: EmbedderPool) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"))
    backend = EmbeddedBackend(settings, runtime=Runtime(settings, embedders=embedders))
    upstream = UpstreamConfig("desk", command=str(tmp_path / "no-such-server"), timeout_seconds=5)
    sources = McpSources([upstream], backend)
    router = ToolRouterServer(backend, ["desk"], sources=sources)
    await backend.start()
    try:
        await sources.start()
        async with Client(router.server, mode="legacy") as client:
            result = await client.call_tool("find_tools", {"query": "weather forecast for Lisbon"})
        assert result.is_error
        assert text(result) == (
            f"find_tools: desk: upstream 'desk' has not been listed (No such file or directory: "
            f"{tmp_path / 'no-such-server'}); retrying in the background"
        )
    finally:
        await sources.stop()
        await backend.stop()


# --- Without a model: configuration, the working set, merging namespaces ---------------------


def found(name: str, score: float, namespace: str = "a", *, pinned: bool = False) -> Found:
    return Found(namespace, name, f"{name} does things", score, {"type": "object", "properties": {}}, pinned)


class StaticBackend:
    """A ``Backend`` answering fixed functions per namespace, or raising a fixed error."""

    def __init__(self, answers: dict[str, list[Found] | RouterError]) -> None:
        self.answers = answers
        self.applied: dict[str, tuple[str, list[str]]] = {}

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def route(self, namespace: str, _query: str, *, max_functions: int | None) -> list[Found]:
        answer = self.answers[namespace]
        if isinstance(answer, RouterError):
            raise answer
        pinned = [f for f in answer if f.pinned]
        return pinned + [f for f in answer if not f.pinned][: max_functions or 3]

    async def apply(self, namespace: str, functions: Sequence[FunctionDef], *, source: str) -> object:
        self.applied[namespace] = (source, [f.name for f in functions])
        return None


async def test_namespaces_are_searched_together_and_merged_by_score() -> None:
    backend = StaticBackend(
        {
            "a": [found("x", 0.9), found("y", 0.5), found("p", 0.1, pinned=True)],
            "b": [found("x", 0.7, "b"), found("z", 0.6, "b")],
            "down": NamespaceNotFound("no catalog named 'down'"),
        }
    )
    router = ToolRouterServer(backend, ["a", "b", "down"])
    finding = await router.find("anything", max_functions=2)
    assert [(f.name, f.namespace) for f in finding.functions] == [("p", "a"), ("x", "a"), ("x", "b")]
    assert finding.unavailable == ["down: no catalog named 'down'"]
    default = await router.find("anything")
    assert [f.name for f in default.functions] == ["p", "x", "x"]  # as many as one namespace answers
    with pytest.raises(RouterError, match="no catalog named 'down'"):
        await ToolRouterServer(backend, ["down"]).find("anything")


def test_the_working_set_keeps_the_latest_found() -> None:
    tools = WorkingSet(3)
    assert tools.add([found("a", 0.9), found("b", 0.5)])
    assert not tools.add([found("a", 0.8)])
    assert tools.add([found("c", 0.7), found("d", 0.6)])
    assert tools.names() == ["c", "d", "a"]
    assert tools.get("b") is None
    assert tools.add([found("c", 0.7, "other")])
    assert tools.names() == ["other__c", "a__c", "d"]
    assert tools.get("c") is None
    assert tools.sharing("c") == ["other__c", "a__c"]
    assert tools.get("a__c") == found("c", 0.7)
    assert tools.get("a__d") == tools.get("d") == found("d", 0.6)


def test_a_name_that_is_another_functions_qualified_name_is_qualified_too() -> None:
    tools = WorkingSet(3)
    tools.add([found("a__c", 0.9, "x"), found("c", 0.8, "a"), found("c", 0.7, "b")])
    assert sorted(tools.names()) == ["a__c", "b__c", "x__a__c"]
    assert tools.get("a__c") == found("c", 0.8, "a")
    assert tools.get("x__a__c") == found("a__c", 0.9, "x")
    tools.add([found("d", 0.6, "b"), found("e", 0.5, "b")])  # both c leave: x's a__c names itself again
    assert sorted(tools.names()) == ["a__c", "d", "e"]
    assert tools.get("a__c") == found("a__c", 0.9, "x")


def test_two_functions_whose_qualified_names_meet_keep_two_tools() -> None:
    # Namespaces may hold "__": a's b__c and a__b's c both qualify as a__b__c.
    tools = WorkingSet(4)
    tools.add([found("b__c", 0.9, "a"), found("b__c", 0.8, "z"), found("c", 0.7, "a__b"), found("c", 0.6, "x")])
    names = tools.names()
    assert sorted(names) == ["a__b__c", "a__b__c_2", "x__c", "z__b__c"]
    reached = [tools.get(name) for name in names]
    assert sorted((f.namespace, f.name) for f in reached if f is not None) == [
        ("a", "b__c"),
        ("a__b", "c"),
        ("x", "c"),
        ("z", "b__c"),
    ]


def test_upstreams_from_flags_and_files(tmp_path: Path) -> None:
    desk = parse_upstream("desk=python 'my server.py' --verbose", resync_seconds=5)
    assert (desk.command, desk.args, desk.target, desk.resync_seconds) == (
        "python",
        ("my server.py", "--verbose"),
        "desk",
        5,
    )
    web = parse_upstream("web=https://example.com/mcp")
    assert (web.url, web.command) == ("https://example.com/mcp", None)
    for bad, reason in [("desk", "NAME=COMMAND"), ("desk= ", "NAME=COMMAND"), ("no space=python x", "namespace")]:
        with pytest.raises(ConfigError, match=reason):
            parse_upstream(bad)

    documented = tmp_path / "upstreams.yaml"
    documented.write_text(marked(DOCS, "upstreams-file"))
    desk, docs = load_upstreams(documented, resync_seconds=30)
    assert (desk.name, desk.command, desk.args, dict(desk.env)) == (
        "desk",
        "python",
        ("tests/integration/mcp_fixture_server.py",),
        {"UNITS": "metric"},
    )
    assert (desk.resync_seconds, desk.timeout_seconds) == (300, 60)
    assert (docs.url, docs.target, docs.resync_seconds) == ("http://127.0.0.1:9000/mcp", "manuals", 30)

    client_config = tmp_path / "claude.json"
    client_config.write_text(json.dumps({"mcpServers": {"fs": {"type": "stdio", "command": "npx", "args": ["fs"]}}}))
    assert [u.describe() for u in load_upstreams(client_config)] == ["npx fs"]
    for spec, reason in [
        ({"command": "x", "headers": {}}, "unknown keys"),
        ({"type": "sse", "url": "http://x"}, "sse"),
    ]:
        client_config.write_text(json.dumps({"upstreams": {"s": spec}}))
        with pytest.raises(ConfigError, match=reason):
            load_upstreams(client_config)

    client_config.write_text('{"upstreams": {"fs": {"command": "npx", "args": ["fs"]}}')
    with pytest.raises(ConfigError, match=r"cannot be parsed: .* at line 1, column \d+") as raised:
        load_upstreams(client_config)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--url", "http://127.0.0.1:8000", "--catalog", str(EXAMPLES), "--namespace", "travel"], "--url"),
        ([], "--namespace"),
        (["--namespace", "bad name"], "namespace"),
        (["--namespace", "x", "--catalog", str(EXAMPLES), "--upstream", "travel=python x"], "also defines"),
        (["--upstream", "a=python x", "--upstream", "a=python y"], "several upstreams"),
        (["--namespace", "x", "--max-functions", "0"], "--max-functions"),
    ],
)
def test_bad_flags_stop_before_anything_starts(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["mcp", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("port", ["99999", "-1", "http"])
def test_a_port_that_is_none_is_refused(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    # The address lookup read 99999 as port 34463, and -1 as a host it could not resolve.
    with pytest.raises(SystemExit) as exited:
        cli_main(["mcp", "--namespace", "x", "--http", "--port", port])
    assert exited.value.code == 2
    assert "argument --port:" in capsys.readouterr().err


def test_a_router_that_cannot_be_reached_stops_start_up_with_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["mcp", "--url", f"http://127.0.0.1:{free_port()}", "--namespace", "travel", "--http"]
    assert cli_main([*argv, "--port", str(free_port())]) == 3
    assert "cannot start the router" in capsys.readouterr().err


def test_http_on_a_port_in_use_says_so_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["mcp", "--http", "--port", str(port), "--namespace", "travel", "--data", str(tmp_path / "data")]

        assert cli_main(argv) == 3

    assert capsys.readouterr().err == f"router mcp: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    assert not (tmp_path / "data").exists()
