"""``RouterContextProvider`` with the real ``agent-framework-core`` and the real sidecar.

The chat client is scripted (no model) but built from Agent Framework's own layers, as the
framework's clients are, so tool calls are really invoked and provider middleware really
runs. The sidecar is served by uvicorn on 127.0.0.1 with the real model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
    ResponseStream,
)
from conftest import EXAMPLES
from test_client import DOCS, DOCS_URL, LiveServer, closed_port

from router.client import AsyncRouterClient, RetryPolicy, RouterClient
from router.embedding import EmbedderPool
from router.integrations._af import from_router, to_router
from router.integrations.agent_framework import RouterContextProvider, tool_definitions
from tests.docs import fenced

pytestmark = pytest.mark.integration

TRAVEL = json.loads((EXAMPLES / "travel.json").read_text())["functions"]
FLIGHT = "Find me a flight from Lisbon to Rome next Friday"


@dataclass
class Request:
    """What the chat client was sent."""

    tools: list[str]
    messages: list[Message]


class ScriptedChatClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A chat client composed like the framework's own, answering from a script instead of a model."""

    def __init__(self, *replies: Message) -> None:
        super().__init__()
        self.replies = list(replies)
        self.requests: list[Request] = []

    def _inner_get_response(self, *, messages: Sequence[Message], stream: bool, options: Any, **_kwargs: Any) -> Any:
        tools = [t.name for t in options.get("tools") or []]
        self.requests.append(Request(tools, list(messages)))
        reply = self.replies.pop(0) if self.replies else Message("assistant", ["Done."])
        if stream:

            async def updates() -> AsyncIterator[ChatResponseUpdate]:
                yield ChatResponseUpdate(role=reply.role, contents=reply.contents)  # type: ignore[arg-type]

            stream_: ResponseStream[ChatResponseUpdate, ChatResponse] = self._build_response_stream(updates())
            return stream_

        async def respond() -> ChatResponse:
            return ChatResponse(messages=[reply])

        return respond()


class Tools:
    """The agent's own callables: every travel function, plus one the catalog does not know."""

    def __init__(self) -> None:
        self.invoked: list[tuple[str, dict[str, Any]]] = []
        self.all = [self._tool(d["function"]) for d in TRAVEL]
        self.all.append(
            FunctionTool(name="escalate_to_human", description="Hand over to a human.", func=self._record("escalate"))
        )

    def _record(self, name: str) -> Any:
        def run(**arguments: Any) -> str:
            self.invoked.append((name, arguments))
            return f"{name}: 3 results"

        return run

    def _tool(self, spec: dict[str, Any]) -> FunctionTool:
        return FunctionTool(
            name=spec["name"],
            description=spec["description"],
            func=self._record(spec["name"]),
            input_model=spec["parameters"],
        )


def call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Message:
    return Message("assistant", [Content.from_function_call(call_id, name, arguments=json.dumps(arguments))])


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> Iterator[LiveServer]:
    with LiveServer(tmp_path_factory.mktemp("agent-framework"), embedders) as server:
        yield server


@pytest.fixture
async def router(live: LiveServer) -> AsyncIterator[AsyncRouterClient]:
    async with AsyncRouterClient(live.url) as client:
        yield client


@pytest.fixture
def sync_router(live: LiveServer) -> Iterator[RouterClient]:
    with RouterClient(live.url) as client:
        yield client


def agent_with(client: ScriptedChatClient, provider: RouterContextProvider, tools: Tools) -> Agent[Any]:
    return Agent(
        client=client, instructions="You are a travel assistant.", tools=tools.all, context_providers=[provider]
    )


def session_id() -> str:
    return f"af-{time.time_ns()}"


def attributed(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.additional_properties.get("_attribution", {}).get("source_id") == "tool_router"]


async def test_the_chat_client_receives_only_the_routed_tools(
    router: AsyncRouterClient, sync_router: RouterClient
) -> None:
    chat, tools = ScriptedChatClient(), Tools()
    agent = agent_with(chat, RouterContextProvider(router, namespace="travel", max_functions=3), tools)
    await agent.run(FLIGHT, session=agent.create_session(session_id=session_id()))
    routed = sync_router.route("travel", FLIGHT, max_functions=3).names
    assert "search_flights" in routed
    assert set(chat.requests[0].tools) == {*routed, "escalate_to_human"}  # the catalog does not know it
    assert len(chat.requests[0].tools) == 4


async def test_an_agent_without_the_routed_functions_gets_its_best_ones(
    router: AsyncRouterClient, sync_router: RouterClient, caplog: pytest.LogCaptureFixture
) -> None:
    routed = sync_router.route("travel", FLIGHT, max_functions=3).names
    tools = Tools()
    tools.all = [t for t in tools.all if t.name not in routed]
    chat = ScriptedChatClient()
    agent = agent_with(chat, RouterContextProvider(router, namespace="travel", max_functions=3), tools)
    with caplog.at_level(logging.WARNING, logger="router.integrations.agent_framework"):
        await agent.run(FLIGHT, session=agent.create_session(session_id=session_id()))
    advertised = set(chat.requests[0].tools) - {"escalate_to_human"}
    assert len(advertised) == 3
    assert not advertised & set(routed)
    wider = sync_router.route("travel", FLIGHT, max_functions=128).names
    assert advertised == set([n for n in wider if n not in routed][:3])
    assert "not among the agent's tools" in caplog.text

    # min_score removing every function is what the caller asked for: nothing is widened.
    strict, chat = RouterContextProvider(router, namespace="travel", min_score=0.99), ScriptedChatClient()
    await agent_with(chat, strict, tools).run(FLIGHT, session=agent.create_session(session_id=session_id()))
    assert chat.requests[0].tools == ["escalate_to_human"]


async def test_the_sidecar_receives_the_runs_messages(router: AsyncRouterClient, sync_router: RouterClient) -> None:
    arguments = {"origin": "LIS", "destination": "FCO", "departure_date": "2025-06-06"}
    chat, tools = (
        ScriptedChatClient(call("search_flights", arguments), Message("assistant", ["I found 3 flights."])),
        Tools(),
    )
    agent = agent_with(chat, RouterContextProvider(router, namespace="travel"), tools)
    sid = session_id()
    response = await agent.run(FLIGHT, session=agent.create_session(session_id=sid))
    assert response.text == "I found 3 flights."
    assert tools.invoked == [("search_flights", arguments)]
    assert all("search_flights" in r.tools for r in chat.requests)  # on every model call of the run
    stored = sync_router.get_messages(sid)
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[0]["content"] == FLIGHT
    (tool_call,) = stored[1]["tool_calls"]
    assert (tool_call["id"], tool_call["function"]["name"]) == ("call_1", "search_flights")
    assert json.loads(tool_call["function"]["arguments"]) == arguments
    assert (stored[2]["tool_call_id"], stored[2]["content"]) == ("call_1", "search_flights: 3 results")
    assert stored[3]["content"] == "I found 3 flights."
    assert {m["source"] for m in stored} == {"external"}
    assert len({m["id"] for m in stored}) == 4


async def test_history_and_memories_come_back_attributed(router: AsyncRouterClient) -> None:
    provider = RouterContextProvider(router, namespace="travel")
    sid, user = session_id(), f"user-{time.time_ns()}"
    first = ScriptedChatClient(Message("assistant", ["TP 840 at 9:00 or AZ 201 at 13:00."]))
    session = AgentSession(session_id=sid)
    provider.bind_user(session, user)
    await agent_with(first, provider, Tools()).run(f"I prefer aisle seats. {FLIGHT}", session=session)

    # A host that rebuilds the session from its id on each request: history comes from the sidecar.
    second = ScriptedChatClient()
    session = AgentSession(session_id=sid)
    provider.bind_user(session, user)
    await agent_with(second, provider, Tools()).run("Book a seat on the first flight", session=session)
    sent = second.requests[0].messages
    added = attributed(sent)
    assert [m.text for m in added[:2]] == [f"I prefer aisle seats. {FLIGHT}", "TP 840 at 9:00 or AZ 201 at 13:00."]
    assert "I prefer aisle seats." in added[2].text  # the memory, after the history
    assert sent[-1].text == "Book a seat on the first flight"
    assert [m.text for m in sent].count(f"I prefer aisle seats. {FLIGHT}") == 1
    assert "book_flight" in second.requests[0].tools


async def test_the_provider_lists_and_forgets_the_users_memories(router: AsyncRouterClient) -> None:
    provider = RouterContextProvider(router, namespace="travel", user_id="default-user")
    user = f"user-{time.time_ns()}"
    session = AgentSession(session_id=session_id())
    provider.bind_user(session, user)
    await agent_with(ScriptedChatClient(Message("assistant", ["Noted."])), provider, Tools()).run(
        "I prefer aisle seats.", session=session
    )
    memories = await provider.list_memories(session=session)
    assert [(m.text, m.namespace, m.session_id) for m in memories] == [
        ("I prefer aisle seats.", "travel", session.session_id)
    ]
    assert await provider.list_memories() == [], "the provider's own user has none"
    assert (await provider.forget_memory(memories[0].id, user_id=user)).deleted == 1
    assert (await provider.forget_memories(session=session)).deleted == 0
    with pytest.raises(ValueError, match="no user"):
        await RouterContextProvider(router).list_memories()


async def test_auto_history_defers_to_the_agents_own(router: AsyncRouterClient) -> None:
    chat = ScriptedChatClient(Message("assistant", ["Here are flights."]), Message("assistant", ["Booked."]))
    agent = agent_with(chat, RouterContextProvider(router, namespace="travel"), Tools())
    session = agent.create_session(session_id=session_id())
    await agent.run(FLIGHT, session=session)
    await agent.run("Book the first one", session=session)
    texts = [m.text for m in chat.requests[1].messages]
    assert texts.count(FLIGHT) == 1  # from the in-memory history only, not twice
    assert attributed(chat.requests[1].messages) == []


async def test_history_tool_calls_are_replayed_not_invoked(router: AsyncRouterClient) -> None:
    provider = RouterContextProvider(router, namespace="travel", load_history=True)
    sid, tools = session_id(), Tools()
    arguments = {"origin": "LIS", "destination": "FCO", "departure_date": "2025-06-06"}
    first = ScriptedChatClient(call("search_flights", arguments), Message("assistant", ["Found."]))
    await agent_with(first, provider, tools).run(FLIGHT, session=AgentSession(session_id=sid))
    second = ScriptedChatClient()
    await agent_with(second, provider, tools).run("Book the first one", session=AgentSession(session_id=sid))
    assert [name for name, _ in tools.invoked] == ["search_flights"]
    roles = [m.role for m in attributed(second.requests[0].messages)]
    assert roles == ["user", "assistant", "tool", "assistant"]


async def test_a_down_sidecar_fails_open(caplog: pytest.LogCaptureFixture) -> None:
    fast = RetryPolicy(attempts=2, backoff=0.01, max_backoff=0.01)
    chat, tools = ScriptedChatClient(), Tools()
    async with AsyncRouterClient(closed_port(), retry=fast) as down:
        agent = agent_with(chat, RouterContextProvider(down, namespace="travel"), tools)
        with caplog.at_level(logging.WARNING, logger="router.integrations.agent_framework"):
            response = await agent.run(FLIGHT, session=agent.create_session())
    assert response.text == "Done."
    assert len(chat.requests[0].tools) == len(tools.all)
    warnings = [r.getMessage() for r in caplog.records]
    assert any(w.startswith("tool router unavailable, advertising every tool") for w in warnings)
    assert any("not stored" in w for w in warnings)


async def test_an_unknown_namespace_fails_open(router: AsyncRouterClient, caplog: pytest.LogCaptureFixture) -> None:
    chat, tools = ScriptedChatClient(), Tools()
    agent = agent_with(chat, RouterContextProvider(router, namespace="no-such-namespace"), tools)
    with caplog.at_level(logging.WARNING, logger="router.integrations.agent_framework"):
        await agent.run(FLIGHT, session=agent.create_session())
    assert len(chat.requests[0].tools) == len(tools.all)
    warnings = [r.getMessage() for r in caplog.records]
    assert any(w.startswith("tool router refused the request, advertising every tool: ") for w in warnings)
    assert any("no catalog named 'no-such-namespace'" in w for w in warnings)


def test_the_provider_takes_the_asyncio_client(sync_router: RouterClient) -> None:
    with pytest.raises(TypeError, match=r"needs an AsyncRouterClient .* not RouterClient"):
        RouterContextProvider(sync_router)  # type: ignore[arg-type]


async def test_streaming_runs_are_routed_and_stored(router: AsyncRouterClient, sync_router: RouterClient) -> None:
    chat = ScriptedChatClient(Message("assistant", ["Streaming answer."]))
    agent = agent_with(chat, RouterContextProvider(router, namespace="travel", max_functions=2), Tools())
    sid = session_id()
    stream = agent.run(FLIGHT, session=agent.create_session(session_id=sid), stream=True)
    async for _ in stream:
        pass
    assert (await stream.get_final_response()).text == "Streaming answer."
    assert len(chat.requests[0].tools) == 3
    assert [m["content"] for m in sync_router.get_messages(sid)] == [FLIGHT, "Streaming answer."]


async def test_one_provider_serves_concurrent_sessions(router: AsyncRouterClient, sync_router: RouterClient) -> None:
    provider = RouterContextProvider(router, namespace="travel")
    asks = {session_id() + f"-{n}": text for n, text in enumerate([FLIGHT, "Convert 100 euros to dollars"])}
    clients = {sid: ScriptedChatClient(Message("assistant", [f"answer to {text}"])) for sid, text in asks.items()}

    async def run(sid: str) -> None:
        await agent_with(clients[sid], provider, Tools()).run(asks[sid], session=AgentSession(session_id=sid))

    await asyncio.gather(*(run(sid) for sid in asks))
    for sid, text in asks.items():
        assert [m["content"] for m in sync_router.get_messages(sid)] == [text, f"answer to {text}"]
    (flight, money) = asks
    assert "search_flights" in clients[flight].requests[0].tools
    assert "convert_currency" in clients[money].requests[0].tools


async def test_tool_definitions_register_the_agents_tools(router: AsyncRouterClient) -> None:
    tools = Tools()
    changes = await router.put_catalog("af-tools", tool_definitions(tools.all))
    assert changes.added == len(tools.all)
    catalog = await router.get_catalog("af-tools")
    assert sorted(catalog.names) == sorted(t.name for t in tools.all)
    await router.delete_catalog("af-tools")


def test_messages_convert_both_ways() -> None:
    run = [
        Message("user", ["Find flights"]),
        Message("assistant", [Content.from_function_call("c1", "search_flights", arguments={"origin": "LIS"})]),
        Message(
            "tool",
            [
                Content.from_function_result("c1", result="3 found"),
                Content.from_function_result("c2", result="Error: Function failed.", exception="ValueError"),
            ],
        ),
        Message("assistant", ["Found 3."], author_name="travel-bot"),
    ]
    stored = to_router(run, source="external")
    assert [m["role"] for m in stored] == ["user", "assistant", "tool", "tool", "assistant"]
    assert stored[1]["tool_calls"][0]["function"] == {"name": "search_flights", "arguments": '{"origin": "LIS"}'}
    assert stored[4]["name"] == "travel-bot"
    # A function that raised is flagged, so that its call teaches nothing.
    assert [m.get("is_error", False) for m in stored[2:4]] == [False, True]
    # A window that cut calls from results: orphans on either side are left out.
    back = from_router([stored[2], *stored[:2], stored[3], stored[4]])
    assert [(m.role, [c.type for c in m.contents]) for m in back] == [("user", ["text"]), ("assistant", ["text"])]
    back = from_router(stored)
    assert [m.role for m in back] == ["user", "assistant", "tool", "assistant"]


def test_the_documented_example_runs(live: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = fenced(DOCS, "Agent Framework provider")
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    exec(compile(block.replace(DOCS_URL, live.url), str(DOCS), "exec"), namespace)  # noqa: S102
    arguments = {"origin": "LIS", "destination": "FCO", "departure_date": "2025-06-06"}
    chat = ScriptedChatClient(call("search_flights", arguments), Message("assistant", ["TP 840 at 09:00, 120 EUR."]))
    asyncio.run(namespace["main"](chat))
    assert capsys.readouterr().out.strip() == "TP 840 at 09:00, 120 EUR."
    tools = chat.requests[0].tools
    assert "search_flights" in tools
    assert "escalate_to_human" in tools
    assert len(tools) == 3


@pytest.mark.parametrize(("search_functions", "loads"), [(2, 2), (None, 3)])  # None: the sidecar's default, 3
async def test_a_search_loads_only_functions_the_agent_has(
    router: AsyncRouterClient, search_functions: int | None, loads: int
) -> None:
    # The catalog is shared with agents that have more tools: what this one lacks is never said to be loaded.
    chat, tools = (
        ScriptedChatClient(
            call("tool_search", {"query": "convert 100 euros to dollars"}, "call_s"),
            Message("assistant", ["I cannot convert currencies."]),
        ),
        Tools(),
    )
    tools.all = [t for t in tools.all if t.name != "convert_currency"]
    provider = RouterContextProvider(
        router, namespace="travel", max_functions=1, search_tool=True, search_functions=search_functions
    )
    agent = agent_with(chat, provider, tools)
    await agent.run(FLIGHT, session=agent.create_session(session_id=session_id()))
    (result,) = [c.result for m in chat.requests[1].messages for c in m.contents if c.type == "function_result"]
    loaded = [f["name"] for f in json.loads(str(result))["loaded"]]
    assert len(loaded) == loads
    assert "convert_currency" not in loaded
    assert set(loaded) <= {t.name for t in tools.all}
    assert set(chat.requests[1].tools) == {"search_flights", "escalate_to_human", "tool_search", *loaded}


async def test_a_search_tool_loads_more_functions_during_the_run(
    router: AsyncRouterClient, sync_router: RouterClient
) -> None:
    money = {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}
    chat, tools = (
        ScriptedChatClient(
            call("tool_search", {"query": "convert 100 euros to dollars"}, "call_s"),
            call("convert_currency", money, "call_c"),
            Message("assistant", ["100 euros are about 108 dollars."]),
        ),
        Tools(),
    )
    provider = RouterContextProvider(router, namespace="travel", max_functions=1, search_tool=True, search_functions=2)
    agent = agent_with(chat, provider, tools)
    await agent.run(FLIGHT, session=agent.create_session(session_id=session_id()))
    assert set(chat.requests[0].tools) == {"search_flights", "escalate_to_human", "tool_search"}
    found = sync_router.tool_search("travel", "convert 100 euros to dollars", max_functions=2).names
    assert "convert_currency" in found
    assert set(chat.requests[1].tools) == {"search_flights", "escalate_to_human", "tool_search", *found}
    assert ("convert_currency", money) in tools.invoked
    search_results = [c.result for m in chat.requests[1].messages for c in m.contents if c.type == "function_result"]
    assert "convert_currency" in str(search_results[0])
    description = (await router.tools("travel", format="anthropic")).tools[0]["description"]
    assert "'travel'" in description
