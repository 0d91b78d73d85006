"""How far one stored run reaches, and the companions runs teach: end to end, through HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from router.client import AsyncRouterClient
from router.retrieval.fusion import AGREED
from tests.conftest import EXAMPLES, Served

pytestmark = pytest.mark.integration

AIRPORT = {
    "name": "get_airport_status",
    "description": "Current status of an airport: delays, closures and weather.",
    "parameters": {"type": "object", "properties": {"airport": {"type": "string", "description": "IATA code"}}},
}
ASKED = "Find me a hotel in Paris for two nights"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def call(name: str, call_id: str, result: str = "done") -> list[dict[str, Any]]:
    function = {"name": name, "arguments": "{}"}
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


async def post(client: httpx.AsyncClient, session: str, messages: list[dict[str, Any]]) -> None:
    response = await client.post(f"/v1/sessions/{session}/messages", json={"namespace": "travel", "messages": messages})
    assert response.status_code == 200, response.text


async def route(client: httpx.AsyncClient, text: str, *, max_functions: int = 3) -> list[dict[str, Any]]:
    body = {"namespace": "travel", "messages": [user(text)], "max_functions": max_functions, "explain": True}
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    functions: list[dict[str, Any]] = response.json()["functions"]
    return functions


def names(functions: list[dict[str, Any]]) -> list[str]:
    return [f["name"] for f in functions]


@pytest.fixture
async def travel(serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("ROUTER_ROUTE_COMPANIONS", "true")
    catalog = json.loads((EXAMPLES / "travel.json").read_text())
    async with serve() as served:
        response = await served.client.put("/v1/catalogs/travel", json={"functions": [*catalog["functions"], AIRPORT]})
        assert response.status_code == 200, response.text
        yield served


async def test_one_wrong_run_moves_its_function_only_for_the_same_request(travel: Served) -> None:
    # The model called the wrong function and it succeeded: nothing in the run says it was wrong.
    await post(travel.client, "mistaken", [user(ASKED), *call("get_airport_status", "c1", "CDG: open, no delays")])

    # Rule: one run speaks for requests that mean the same thing (its own, rephrased), nothing wider.
    assert names(await route(travel.client, ASKED))[0] == "get_airport_status"
    assert names(await route(travel.client, "Find me a hotel in Paris for 2 nights"))[0] == "get_airport_status"
    assert "get_airport_status" not in names(await route(travel.client, "I need a room in Berlin for the weekend"))[:2]
    assert "get_airport_status" not in names(await route(travel.client, "Any rooms free in Vienna next week?"))[:2]


async def test_runs_that_asked_the_same_outvote_a_wrong_run(travel: Served) -> None:
    await post(travel.client, "mistaken", [user(ASKED), *call("get_airport_status", "c1", "CDG: open, no delays")])
    before = await route(travel.client, "Find me a hotel in Rome for two nights", max_functions=5)
    for number, city in enumerate(["Rome", "Madrid"]):
        asked = user(f"Find me a hotel in {city} for two nights")
        await post(travel.client, f"right-{number}", [asked, *call("book_hotel", f"h{number}")])

    after = await route(travel.client, "Find me a hotel in Rome for two nights", max_functions=5)

    # Alone, the wrong run lifts its function for the requests like its own.
    assert "get_airport_status" in names(before)[:2]
    assert next(f for f in before if f["name"] == "get_airport_status")["explanation"]["example"]["text"] == ASKED
    # Two runs that asked the same thing called another function: the wrong one's example no longer counts.
    assert names(after)[0] == "book_hotel"
    assert "get_airport_status" not in names(after)[:3]
    assert all(f["explanation"]["example"] is None for f in after if f["name"] == "get_airport_status")


@pytest.mark.parametrize("posts", [1, 2])
async def test_functions_runs_called_together_are_not_outvoted(travel: Served, posts: int) -> None:
    for number, city in enumerate(["Rome", "Madrid"]):
        calls = [{"id": f"{name}-{number}", "type": "function", "function": {"name": name, "arguments": "{}"}}
                 for name in ("search_flights", "book_flight")]  # fmt: skip
        results = [{"role": "tool", "tool_call_id": c["id"], "content": "done"} for c in calls]
        asked = [user(f"Find and book a flight from Lisbon to {city}"), {"role": "assistant", "tool_calls": calls}]
        if posts == 1:  # both calls in one message, answered together
            await post(travel.client, f"both-{number}", [*asked, *results])
        else:  # the second result comes in the session's next post
            await post(travel.client, f"both-{number}", [*asked, results[0]])
            await post(travel.client, f"both-{number}", [results[1]])
    await post(travel.client, "search", [user("Find a flight from Lisbon to Oslo"), *call("search_flights", "s")])

    # The nearest run called search_flights alone, and more runs called it than book_flight: those that
    # called both say that book_flight goes with it, not instead of it.
    found = await route(travel.client, "Find a flight from Lisbon to Oslo", max_functions=5)

    booked = next(f for f in found if f["name"] == "book_flight")
    assert booked["explanation"]["example"] is not None


async def test_a_request_taught_again_keeps_what_either_run_called_beside_it(travel: Served) -> None:
    await post(travel.client, "alone", [user("Find a flight from Lisbon to Rome"), *call("search_flights", "s")])
    calls = [{"id": f"{name}-c", "type": "function", "function": {"name": name, "arguments": "{}"}}
             for name in ("search_flights", "book_flight")]  # fmt: skip
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "done"} for c in calls]
    asked = [user("Find a flight from Lisbon to Rome"), {"role": "assistant", "tool_calls": calls}]
    await post(travel.client, "both", [*asked, *results])

    examples = travel.runtime.service.index.store.examples
    kept = {r.payload["name"]: r.payload["with"] for r in examples.collection.scroll({"namespace": "travel"})}
    assert kept == {"search_flights": ["book_flight"], "book_flight": ["search_flights"]}


async def test_runs_that_asked_the_same_count_as_the_functions_own_text(travel: Served) -> None:
    asked = "Find me a hotel in Lisbon for two nights"
    # Requests for the same thing: within cosine 0.6 of the asked one, none within 0.95 of another.
    stored = [
        "Find me a hotel in Rome for two nights",
        "I need a hotel room in Madrid for two nights",
        "Find me a hotel in Paris for two nights",
    ]
    assert len(stored) >= AGREED
    explained = []
    for number, request in enumerate(stored[:AGREED]):
        await post(travel.client, f"run-{number}", [user(request), *call("book_hotel", f"c{number}")])
        found = await route(travel.client, asked)
        explained.append(next(f for f in found if f["name"] == "book_hotel")["explanation"])
    once, agreed = explained[0], explained[-1]

    # One run is an anecdote: its example counts at b, below the function's own text.
    assert once["example"]["runs"] == 1
    weights = once["weights"]
    assert once["terms"]["usage"] == pytest.approx(weights["dense"] * weights["usage"] * once["example"]["similarity"])
    # Runs that asked the same thing are evidence: their example counts as the function's own text would.
    assert agreed["example"]["runs"] == AGREED
    assert agreed["weights"]["usage"] == 1.0
    agreed_weights = agreed["weights"]
    assert agreed["terms"]["usage"] == pytest.approx(
        agreed_weights["dense"] * agreed_weights["usage"] * agreed["example"]["similarity"]
    )
    assert agreed["terms"]["usage"] > once["terms"]["usage"]
    async with AsyncRouterClient("http://test", transport=httpx.ASGITransport(app=travel.app)) as client:
        typed = await client.route("travel", asked, explain=True)
    booked = next(f for f in typed.functions if f.name == "book_hotel")
    assert booked.explanation is not None
    assert booked.explanation.example is not None
    assert booked.explanation.example.runs == AGREED


async def test_runs_that_agree_widen_the_reach(travel: Served) -> None:
    berlin = "I need a room in Berlin for the weekend"
    # Cosine 0.45 to the Berlin request: the same neighbourhood, not the same request.
    await post(travel.client, "agree-0", [user("Find me a hotel in Paris for two nights"), *call("book_hotel", "c")])
    alone = await route(travel.client, berlin, max_functions=5)
    # A second run that agrees (cosine 0.41): two stored requests reach further than one.
    await post(
        travel.client, "agree-1", [user("Look for a place to stay in Madrid next week"), *call("book_hotel", "c")]
    )
    agreed = await route(travel.client, berlin, max_functions=5)

    assert all(f["explanation"]["example"] is None for f in alone)
    booked = next(f for f in agreed if f["name"] == "book_hotel")
    assert booked["explanation"]["example"]["text"] == "Find me a hotel in Paris for two nights"
    assert names(agreed).index("book_hotel") < names(alone).index("book_hotel")


async def test_companions_learned_from_runs_come_back_explained(travel: Served) -> None:
    for number, city in enumerate(["Rome", "Madrid", "Oslo"]):
        run = [
            user(f"Find flights from Lisbon to {city} on June 6. Then book the cheapest one for me."),
            *call("search_flights", f"s{number}", "TP 840 at 09:00"),
            *call("book_flight", f"b{number}", "booked"),
        ]
        await post(travel.client, f"trip-{number}", run)

    found = await route(travel.client, "Show me flights from Porto to Athens next Friday", max_functions=3)
    assert found[0]["name"] == "search_flights"
    booked = next(f for f in found if f["name"] == "book_flight")
    assert booked["explanation"]["companion_of"] == "search_flights"
    assert booked["score"] <= found[0]["score"]


async def test_failed_calls_and_a_single_run_teach_no_companion(travel: Served) -> None:
    for number, city in enumerate(["Rome", "Madrid"]):
        run = [
            user(f"Find flights from Lisbon to {city} on June 6"),
            *call("search_flights", f"s{number}", "TP 840 at 09:00"),
            *call("get_seat_map", f"m{number}", "Error: Argument parsing failed."),
        ]
        await post(travel.client, f"failed-{number}", run)
    await post(
        travel.client,
        "once",
        [user("Find flights to Oslo"), *call("search_flights", "s"), *call("convert_currency", "c")],
    )

    found = await route(travel.client, "Show me flights from Porto to Athens next Friday", max_functions=5)
    assert all(f["explanation"]["companion_of"] is None for f in found)
    store = travel.runtime.service.index.store.companions
    assert store is not None
    assert store.count("travel") == 1  # the runs whose second call failed called one function


async def test_companions_can_be_switched_off(serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_ROUTE_COMPANIONS", "false")
    catalog = json.loads((EXAMPLES / "travel.json").read_text())
    async with serve() as served:
        await served.client.put("/v1/catalogs/travel", json=catalog)
        for number, city in enumerate(["Rome", "Madrid", "Oslo"]):
            asked = user(f"Find flights from Lisbon to {city}. Then book the cheapest one.")
            run = [asked, *call("search_flights", "s"), *call("book_flight", "b")]
            await post(served.client, f"trip-{number}", run)
        found = await route(served.client, "Show me flights from Porto to Athens next Friday", max_functions=3)
        assert all(f["explanation"]["companion_of"] is None for f in found)
        store = served.runtime.service.index.store.companions
        assert store is not None
        assert store.count("travel") == 3  # kept all the same, for when they are switched on


async def test_a_changed_function_loses_its_companions(travel: Served) -> None:
    for number in range(2):
        run = [user("Find flights from Lisbon to Rome"), *call("search_flights", "s"), *call("book_flight", "b")]
        await post(travel.client, f"trip-{number}", run)
    store = travel.runtime.service.index.store.companions
    assert store is not None
    assert store.count("travel") == 2
    catalog = json.loads((EXAMPLES / "travel.json").read_text())
    for function in catalog["functions"]:
        if function["function"]["name"] == "book_flight":
            function["function"]["description"] += " Payment is taken at once."
    await travel.client.put("/v1/catalogs/travel", json={"functions": [*catalog["functions"], AIRPORT]})
    assert store.count("travel") == 0
