"""The Python client against the real sidecar: uvicorn on 127.0.0.1, the real model, embedded storage.

The documented examples (``docs/integrations.md``: the "Python client" section and the
tool search blocks marked ``<!-- test: NAME -->``) run here too, pointed at this server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from anthropic.types import ToolUseBlock
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from conftest import EXAMPLES, ROOT, STOCKS, TIMEZONE, WEATHER
from openai.types.responses import ResponseToolSearchCall
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

from router.app import create_app
from router.client import (
    AsyncRouterClient,
    NotFoundError,
    RetryPolicy,
    RouterClient,
    TransportError,
    ValidationError,
)
from router.embedding import EmbedderPool
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings
from tests.docs import fenced, marked
from tests.sdk_types import conforms

pytestmark = pytest.mark.integration

DOCS = ROOT / "docs" / "integrations.md"
DOCS_URL = "http://127.0.0.1:8000"


class LiveServer:
    """The app served by uvicorn on a free 127.0.0.1 port, in a background thread."""

    def __init__(self, root: Path, embedders: EmbedderPool) -> None:
        catalog = Path(shutil.copytree(EXAMPLES, root / "catalog"))
        with pytest.MonkeyPatch.context() as env:  # a developer's ROUTER_* variables never reach the server
            for name in [n for n in os.environ if n.startswith("ROUTER_")]:
                env.delenv(name)
            settings = Settings(storage=StorageSettings(data=root / "data"), sync=SyncSettings(catalog=catalog))
        app = create_app(runtime=Runtime(settings, embedders=embedders))
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        with RouterClient(self.url) as client:
            client.wait_ready(120)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.socket.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> Iterator[LiveServer]:
    with LiveServer(tmp_path_factory.mktemp("client"), embedders) as server:
        yield server


@pytest.fixture
def router(live: LiveServer) -> Iterator[RouterClient]:
    with RouterClient(live.url) as client:
        yield client


def closed_port() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def test_route_returns_typed_functions(router: RouterClient) -> None:
    result = router.route("travel", "Find me a flight from Lisbon to Rome next Friday", max_functions=3)
    assert len(result.functions) == 3
    first = result.functions[0]
    assert first.name == "search_flights"
    assert "flight" in first.description.lower()
    assert 0 < first.score <= 1
    assert "origin" in first.parameters["properties"]
    assert [f.score for f in result.functions] == sorted((f.score for f in result.functions), reverse=True)
    assert [t["function"]["name"] for t in result.tools] == result.names
    assert result.context == "Find me a flight from Lisbon to Rome next Friday"
    assert (result.history, result.memories, result.memory_context) == ((), (), "")


def test_route_options_reach_the_sidecar(router: RouterClient) -> None:
    result = router.route(
        "travel", [{"role": "user", "content": "Convert 100 euros to dollars"}], max_functions=1, pinned=["get_booking"]
    )
    assert [(f.name, f.pinned) for f in result.functions] == [("get_booking", True), ("convert_currency", False)]
    assert router.route("travel", "Convert 100 euros to dollars", min_score=0.99).functions == ()


def test_catalog_lifecycle(router: RouterClient) -> None:
    changes = router.put_catalog("client-demo", [WEATHER, STOCKS], pinned=["get_stock_price"])
    assert (changes.namespace, changes.added, changes.updated, changes.removed) == ("client-demo", 2, 0, 0)
    catalog = router.get_catalog("client-demo")
    assert (catalog.source, catalog.count, catalog.pinned) == ("api", 2, ("get_stock_price",))
    assert sorted(catalog.names) == ["get_stock_price", "get_weather"]
    assert WEATHER in catalog.functions
    listed = {c.namespace: c for c in router.list_catalogs()}
    assert listed["client-demo"].count == 2
    assert listed["travel"].source.startswith("dir:")
    assert router.route("client-demo", "Is it raining in Oslo?", max_functions=1).names == [
        "get_stock_price",
        "get_weather",
    ]
    changed = {**WEATHER, "description": "Current weather and the forecast for a city."}
    changes = router.put_catalog("client-demo", [changed, TIMEZONE])
    assert (changes.added, changes.updated, changes.removed, changes.unchanged) == (1, 1, 1, 0)
    assert router.delete_catalog("client-demo").removed == 2
    with pytest.raises(NotFoundError) as caught:
        router.get_catalog("client-demo")
    assert caught.value.error == "NamespaceNotFound"


def test_session_messages_history_and_memories(router: RouterClient) -> None:
    session, user = f"client-{time.time_ns()}", f"user-{time.time_ns()}"
    run: list[dict[str, Any]] = [
        {"role": "user", "content": "I prefer aisle seats. Find flights from Lisbon to Rome on Friday."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "search_flights", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "3 flights found"},
        {"role": "assistant", "content": "I found 3 flights."},
    ]
    stored = router.add_messages(session, run, user_id=user, namespace="travel")
    assert (stored.session_id, stored.stored) == (session, 4)
    assert stored.memories_added >= 1
    history = router.get_messages(session)
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[1]["tool_calls"][0]["function"]["name"] == "search_flights"
    assert {m["source"] for m in history} == {"external"}
    result = router.route(
        "travel", "Book a seat on the first flight", session_id=session, user_id=user, history_messages=2
    )
    assert [m["role"] for m in result.history] == ["tool", "assistant"]
    assert any("aisle" in m.text for m in result.memories)
    assert "aisle" in result.memory_context
    assert router.get_messages("no-such-session") == []


def test_a_users_memories_are_listed_and_forgotten(router: RouterClient, live: LiveServer) -> None:
    user = f"memories-{time.time_ns()}"
    router.add_messages(f"{user}-a", "I prefer aisle seats.", user_id=user, namespace="travel")
    router.add_messages(f"{user}-b", "Our production cluster is prod-eu-1.", user_id=user, namespace="devops")
    memories = router.list_memories(user)
    assert [(m.text, m.namespace, m.session_id) for m in memories] == [
        ("I prefer aisle seats.", "travel", f"{user}-a"),
        ("Our production cluster is prod-eu-1.", "devops", f"{user}-b"),
    ]
    assert [m.text for m in router.list_memories(user, namespace="devops")] == ["Our production cluster is prod-eu-1."]
    assert router.delete_memory(user, memories[0].id).deleted == 1
    with pytest.raises(NotFoundError):
        router.delete_memory(user, memories[0].id)

    async def forget_all() -> tuple[int, int]:
        async with AsyncRouterClient(live.url) as client:
            left = await client.list_memories(user)
            return len(left), (await client.delete_memories(user)).deleted

    assert asyncio.run(forget_all()) == (1, 1)
    assert router.list_memories(user) == []


def test_replaced_memories_limited_history_a_forgotten_session_and_the_status(router: RouterClient) -> None:
    user, session = f"moves-{time.time_ns()}", f"moves-{time.time_ns()}"
    router.add_messages(f"{session}-a", "I live in Porto.", user_id=user, namespace="travel")
    router.add_messages(session, "We moved to Lisbon last month.", user_id=user, namespace="travel")
    assert [m.text for m in router.list_memories(user)] == ["We moved to Lisbon last month."]
    everything = router.list_memories(user, superseded=True)
    porto, lisbon = everything
    assert (porto.status, porto.superseded_by, porto.expires_at) == ("superseded", lisbon.id, None)
    assert lisbon.status == "current"
    forgot = router.add_messages(session, "Forget that I live in Porto.", user_id=user, namespace="travel")
    assert forgot.memories_forgotten == 1
    assert [m.text for m in router.list_memories(user, superseded=True)] == ["We moved to Lisbon last month."]
    # A memory for every namespace that one namespace replaced says where.
    router.add_messages(f"{session}-b", "My manager is Sarah.", user_id=user)
    router.add_messages(f"{session}-c", "My manager is Tom.", user_id=user, namespace="travel")
    (sarah,) = router.list_memories(user, namespace="*")
    assert (sarah.text, sarah.replaced_in, sarah.status) == ("My manager is Sarah.", ("travel",), "current")

    router.add_messages(session, [{"role": "assistant", "content": "Noted."}])
    assert [m["content"] for m in router.get_messages(session, limit=1)] == ["Noted."]
    assert router.delete_session(session).deleted == 3
    assert router.get_messages(session) == []

    status = router.status()
    assert "travel" in {c["namespace"] for c in status["catalogs"]}


def test_messages_with_ids_are_stored_once(router: RouterClient) -> None:
    session = f"client-ids-{time.time_ns()}"
    message = {"id": "m-1", "role": "user", "content": "Hello"}
    router.add_messages(session, [message])
    router.add_messages(session, [message])
    assert len(router.get_messages(session)) == 1


def test_misses_are_read_with_their_limit(router: RouterClient) -> None:
    session, asked = f"misses-{time.time_ns()}", "Is it raining in Oslo?"
    router.put_catalog("client-misses", [WEATHER, STOCKS, TIMEZONE])
    assert router.misses("client-misses").miss_rate is None
    assert router.route("client-misses", asked, session_id=session, max_functions=1).names == ["get_weather"]
    for names in (["get_weather", "get_local_time"], ["get_local_time"]):
        called = [{"id": n, "type": "function", "function": {"name": n, "arguments": "{}"}} for n in names]
        run = [{"role": "user", "content": asked}, {"role": "assistant", "content": None, "tool_calls": called}]
        router.add_messages(session, run, namespace="client-misses")
    shown = router.misses("client-misses")
    assert (shown.counts.routed, shown.counts.searched, shown.counts.missed) == (1, 0, 2)
    assert (shown.checked, shown.miss_rate) == (3, pytest.approx(2 / 3))
    assert [(f.name, f.misses) for f in shown.most_missed] == [("get_local_time", 2)]
    assert [(c.function, c.session_id, c.request, c.routed) for c in shown.latest] == [
        ("get_local_time", session, asked, ("get_weather",))
    ] * 2
    assert len(router.misses("client-misses", limit=1).latest) == 1
    with pytest.raises(ValidationError, match="limit"):
        router.misses("client-misses", limit=101)
    with pytest.raises(NotFoundError) as missing:
        router.misses("no-such-namespace")
    assert (missing.value.status_code, missing.value.error) == (404, "NamespaceNotFound")
    router.delete_catalog("client-misses")


def test_errors_are_typed(router: RouterClient) -> None:
    with pytest.raises(NotFoundError) as missing:
        router.route("no-such-namespace", "Find a flight")
    assert (missing.value.status_code, missing.value.error) == (404, "NamespaceNotFound")
    with pytest.raises(ValidationError, match="max_functions") as invalid:
        router.route("travel", "Find a flight", max_functions=1000)
    assert invalid.value.status_code == 422
    with pytest.raises(ValidationError, match="messages"):
        router.route("travel", [{"role": "assistant", "content": "Hello"}])
    with pytest.raises(ValidationError, match="pinned"):
        router.route("travel", "Find a flight", pinned=["no_such_function"])
    with pytest.raises(ValidationError):
        router.put_catalog("client-bad", [{"description": "a function without a name"}])


def test_health_and_readiness(router: RouterClient) -> None:
    assert router.health().status == "ok"
    ready = router.readiness()
    assert ready.ready
    assert ready.checks == {"storage": True, "model": True, "first_sync": True}


def test_an_absent_sidecar_raises_a_transport_error_after_retries() -> None:
    policy = RetryPolicy(attempts=3, backoff=0.05, max_backoff=0.05)
    started = time.monotonic()
    with RouterClient(closed_port(), retry=policy) as client, pytest.raises(TransportError, match="ConnectError"):
        client.route("travel", "Find a flight")
    assert time.monotonic() - started >= 0.05  # it waited between attempts


async def test_the_async_client_covers_the_same_api(live: LiveServer) -> None:
    session = f"async-{time.time_ns()}"
    async with AsyncRouterClient(live.url) as router:
        assert (await router.readiness()).ready
        result = await router.route("devops", "Roll back the payments service", session_id=session)
        assert result.functions[0].name == "rollback_deployment"
        await router.add_messages(session, [{"role": "user", "content": "Roll back the payments service"}])
        assert [m["content"] for m in await router.get_messages(session)] == ["Roll back the payments service"]
        assert (await router.put_catalog("async-demo", [WEATHER])).added == 1
        assert (await router.get_catalog("async-demo")).names == ["get_weather"]
        assert "async-demo" in {c.namespace for c in await router.list_catalogs()}
        assert (await router.delete_catalog("async-demo")).removed == 1
        with pytest.raises(NotFoundError):
            await router.delete_catalog("async-demo")


def test_the_documented_examples_run(live: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = fenced(DOCS, "Python client")
    assert len(blocks) >= 3
    for block in blocks:
        assert DOCS_URL in block
        exec(compile(block.replace(DOCS_URL, live.url), str(DOCS), "exec"), {"__name__": "__docs__"})  # noqa: S102
    printed = capsys.readouterr().out
    assert "search_flights" in printed
    assert "NamespaceNotFound" in printed


def test_tool_search_and_tool_lists(router: RouterClient) -> None:
    found = router.tool_search("travel", "Find me a flight from Lisbon to Rome", call_id="call_1")
    assert found.names[0] == "search_flights"
    assert (found.item["type"], found.item["call_id"]) == ("tool_search_output", "call_1")
    assert [t["name"] for t in found.item["tools"]] == found.names
    assert all(f.namespace == "travel" and 0 < f.score <= 1 for f in found.functions)
    both = router.tool_search(["travel", "commerce"], "Refund my order", format="anthropic", call_id="toolu_1")
    assert both.item["tool_use_id"] == "toolu_1"
    assert both.functions[0].namespace == "commerce"
    assert router.tool_search("travel", "Convert euros to dollars", format="plain", max_functions=1).names == [
        "convert_currency"
    ]
    with pytest.raises(ValidationError, match="call_id"):
        router.tool_search("travel", "Find a flight", format="anthropic")
    with pytest.raises(NotFoundError):
        router.tool_search("no-such-namespace", "Find a flight")
    listed = router.tools("travel", format="anthropic", load=["book_flight"])
    assert (listed.namespace, listed.format) == ("travel", "anthropic")
    assert [t["name"] for t in listed.tools[:2]] == ["tool_search", "book_flight"]
    assert all(t["defer_loading"] for t in listed.tools[2:])
    assert router.tools("travel") == router.tools("travel")
    routed = router.route("travel", "Find me a flight from Lisbon to Rome", defer_rest=True)
    assert routed.tools[0]["type"] == "tool_search"
    assert len(routed.tools) == 16


async def test_the_async_client_searches_too(live: LiveServer) -> None:
    async with AsyncRouterClient(live.url) as router:
        found = await router.tool_search("devops", "Roll back the payments service", format="mcp")
        assert found.names[0] == "rollback_deployment"
        assert found.item["tools"][0]["name"] == "rollback_deployment"
        listed = await router.tools("devops")
        assert listed.tools[0]["type"] == "tool_search"
        routed = await router.route("devops", "Roll back the payments service", defer_rest=True, format="anthropic")
        assert routed.tools[0]["name"] == "tool_search"


def run_doc_block(name: str, live: LiveServer) -> dict[str, Any]:
    block = marked(DOCS, name)
    assert DOCS_URL in block
    scope: dict[str, Any] = {"__name__": "__docs__"}
    exec(compile(block.replace(DOCS_URL, live.url), str(DOCS), "exec"), scope)  # noqa: S102
    return scope


def test_the_documented_openai_tool_search_loop(live: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    scope = run_doc_block("tool-search-openai", live)
    assert "search_flights" in capsys.readouterr().out
    first, then = scope["first_request"], scope["next_request"]
    conforms(ResponseCreateParamsNonStreaming, first)
    conforms(ResponseCreateParamsNonStreaming, then)
    ResponseToolSearchCall.model_validate(scope["search_call"])  # what the model's output holds
    output = then["input"][-1]
    assert (output["type"], output["call_id"]) == ("tool_search_output", "call_1")
    loaded = [t["name"] for t in output["tools"]]
    assert loaded[0] == "search_flights"
    deferred = {t["name"]: t for t in first["tools"] if t.get("defer_loading")}
    assert all(tool == deferred[tool["name"]] for tool in output["tools"])  # the same definitions, loaded


def test_the_documented_anthropic_tool_search_loop(live: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    scope = run_doc_block("tool-search-anthropic", live)
    assert "search_flights" in capsys.readouterr().out
    first, then = scope["first_request"], scope["next_request"]
    conforms(MessageCreateParamsNonStreaming, first)
    conforms(MessageCreateParamsNonStreaming, then)
    ToolUseBlock.model_validate(scope["use"])  # what the model's response holds
    result = then["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "toolu_01"
    referenced = [block["tool_name"] for block in result["content"]]
    assert referenced[0] == "search_flights"
    deferred = {t["name"] for t in first["tools"] if t.get("defer_loading")}
    assert set(referenced) <= deferred  # every reference names a deferred tool of the request


def test_the_documented_langgraph_retriever(live: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    scope = run_doc_block("tool-search-langgraph", live)
    assert "['currency']" in capsys.readouterr().out
    assert callable(scope["build_agent"])
    # The agent outlives the block that wrote the catalog, and may be served with asyncio.run per request.
    question = "Restart the payments service"
    assert scope["retrieve"](question) == ["restart"]
    for _ in range(2):
        assert asyncio.run(scope["aretrieve"](question)) == ["restart"]
