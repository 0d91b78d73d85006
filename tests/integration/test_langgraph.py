"""langgraph-bigtool agents retrieving their tools through the router: the real package, a real
server, and a scripted chat model from langchain-core's test helpers.

The scripted model searches, then answers: langgraph-bigtool 0.0.3 routes a call of a retrieved
tool through ``ToolNode.inject_tool_args``, which langgraph-prebuilt 1.1 no longer has, so the
graph runs its retrieval step and its rebinding here, and the retrieved tool is called directly.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph_bigtool import create_agent

from router.client import AsyncRouterClient, RouterClient
from router.embedding import EmbedderPool
from router.integrations.langgraph import RouterToolRetriever, retrieve_tools, tool_definitions
from tests.integration.test_client import LiveServer

pytestmark = pytest.mark.integration


@tool
def convert_currency(amount: float, source: str, target: str) -> str:
    """Convert an amount of money from one currency to another at today's exchange rate."""
    return f"{amount} {source} is {amount * 1.08:.2f} {target}"


@tool
def search_flights(origin: str, destination: str, date: str) -> str:
    """Search flights between two airports on a date."""
    return "TP 840, AZ 201"


@tool
def book_hotel(hotel: str, nights: int) -> str:
    """Reserve a room at a hotel for a number of nights."""
    return "booked"


@tool
def get_weather(city: str) -> str:
    """Current weather conditions and the forecast for a city."""
    return "sunny"


@tool
def restart_service(service: str) -> str:
    """Restart a running service of the production cluster."""
    return "restarted"


REGISTRY: dict[str, BaseTool] = {
    f"tool-{i}": t for i, t in enumerate([convert_currency, search_flights, book_hotel, get_weather, restart_service])
}
CURRENCY_ID = "tool-0"


class ScriptedModel(GenericFakeChatModel):
    """Answers with the scripted messages, and records the tools each call was bound with."""

    bound: list[list[str]] = []  # noqa: RUF012 (a pydantic field)

    def bind_tools(self, tools: Sequence[Any], **_: Any) -> ScriptedModel:
        self.bound.append([t.name for t in tools])
        return self


def script() -> ScriptedModel:
    return ScriptedModel(
        messages=iter([
            AIMessage("", tool_calls=[
                {"name": "retrieve_tools", "args": {"query": "convert 100 euros to dollars"}, "id": "r1"}
            ]),
            AIMessage("100 euros are 108 dollars."),
        ]),
        bound=[],
    )  # fmt: skip


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool) -> Iterator[LiveServer]:
    with LiveServer(tmp_path_factory.mktemp("langgraph"), embedders) as server:
        with RouterClient(server.url) as router:
            router.put_catalog("bigtool", tool_definitions(REGISTRY))
        yield server


def check_run(result: dict[str, Any], model: ScriptedModel) -> None:
    assert CURRENCY_ID in result["selected_tool_ids"]
    assert set(result["selected_tool_ids"]) <= set(REGISTRY)
    retrieval = next(m for m in result["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "r1")
    assert "convert_currency" in str(retrieval.content)
    assert model.bound[0] == ["retrieve_tools"]
    assert model.bound[1][0] == "retrieve_tools"
    assert "convert_currency" in model.bound[1]
    assert len(model.bound[1]) == 3  # the retrieval tool and the two tools found
    found = REGISTRY[CURRENCY_ID].invoke({"amount": 100, "source": "EUR", "target": "USD"})
    assert found == "100.0 EUR is 108.00 USD"
    assert result["messages"][-1].content == "100 euros are 108 dollars."


def test_a_bigtool_agent_retrieves_its_tools_through_the_router(live: LiveServer) -> None:
    model = script()
    with RouterClient(live.url) as router:
        retrieve, aretrieve = retrieve_tools("bigtool", registry=REGISTRY, limit=2, client=router)
        agent = create_agent(model, REGISTRY, retrieve_tools_function=retrieve, retrieve_tools_coroutine=aretrieve)
        result = agent.compile().invoke({"messages": [HumanMessage("How much is 100 euros in dollars?")]})
        check_run(result, model)
        again = retrieve("restart the payments service")
    assert len(again) == 2
    assert again[0] == "tool-4"


async def test_the_async_retrieval_runs_in_an_async_agent(live: LiveServer) -> None:
    model = script()
    async with AsyncRouterClient(live.url) as router:
        _, aretrieve = retrieve_tools("bigtool", registry=REGISTRY, limit=2, async_client=router)
        agent = create_agent(model, REGISTRY, retrieve_tools_coroutine=aretrieve)
        result = await agent.compile().ainvoke({"messages": [HumanMessage("How much is 100 euros in dollars?")]})
    check_run(result, model)
    retriever = RouterToolRetriever("bigtool", registry=REGISTRY, url=live.url)
    assert (await retriever.asearch("restart the payments service"))[0] == "tool-4"
    # Given only a blocking client, the async retrievals go where it goes (not to the default URL).
    with RouterClient(live.url, api_key="unused") as blocking:
        assert (blocking.base_url.rstrip("/"), blocking.headers["authorization"]) == (live.url, "Bearer unused")
        alone = RouterToolRetriever("bigtool", registry=REGISTRY, client=blocking)
        assert (await alone.asearch("restart the payments service"))[0] == "tool-4"


def test_without_a_registry_the_ids_are_the_function_names(live: LiveServer) -> None:
    with RouterClient(live.url) as router:
        retriever = RouterToolRetriever(["bigtool", "travel"], client=router, limit=3)
        found = retriever.search("What's the weather like in Oslo?")
    assert found[0] == "get_weather"
    assert len(found) == 3
    definitions = tool_definitions([get_weather])
    assert definitions[0]["function"]["name"] == "get_weather"
    assert definitions[0]["function"]["parameters"]["required"] == ["city"]


def test_the_retriever_maps_names_to_registry_ids() -> None:
    retriever = RouterToolRetriever("bigtool", registry=REGISTRY)
    assert retriever.ids is not None
    assert retriever.ids["convert_currency"] == CURRENCY_ID


def test_functions_the_registry_lacks_give_way_to_those_it_holds(
    live: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    query = "convert euros to dollars for my flight"
    with RouterClient(live.url) as router:
        best = RouterToolRetriever("bigtool", client=router, limit=2).search(query)
        # The catalog's best functions for the query are ones this agent's registry does not hold.
        partial = {k: v for k, v in REGISTRY.items() if v.name not in best}
        found = RouterToolRetriever("bigtool", registry=partial, client=router, limit=2).search(query)
    assert len(found) == 2
    assert set(found) <= set(partial)
    assert all(name in caplog.text for name in best)


async def test_the_async_search_also_gives_way(live: LiveServer) -> None:
    only = {"tool-4": restart_service}
    async with AsyncRouterClient(live.url) as router:
        retriever = RouterToolRetriever("bigtool", registry=only, async_client=router, limit=1)
        assert await retriever.asearch("How much is 100 euros in dollars?") == ["tool-4"]
