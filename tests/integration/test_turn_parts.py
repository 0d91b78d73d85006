"""A turn that asks several things: each part's tools in the top few, and explained.

Real model, embedded Qdrant, HTTP through the ASGI app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Served, bare

pytestmark = pytest.mark.integration

# Flights crowd the catalog: a turn that starts with a flight leans towards all of them.
TRAVEL = [
    bare("book_flight", "Book a seat on a flight for a passenger.", flight="Flight number", passenger="Passenger"),
    bare("search_flights", "Search flights between two airports on a date.", origin="From", destination="To"),
    bare("flight_status", "Current status of a flight: on time, delayed or cancelled.", flight="Flight number"),
    bare("cancel_flight", "Cancel a flight booking.", booking="Booking reference"),
    bare("seat_map", "Show the free seats of a flight.", flight="Flight number"),
    bare("send_email", "Send an email message to a recipient.", to="Recipient", body="Text"),
    bare("convert_currency", "Convert an amount of money between currencies.", amount="Amount", to="Currency"),
    bare("get_weather", "Current weather for a city.", city="City"),
    bare("book_hotel", "Book a hotel room in a city.", city="City", nights="Nights"),
]
THREE_STEPS = (
    "Book flight AZ 201 to Rome for Anna. Then email the itinerary to Dana. Lastly, convert 300 euros to dollars."
)


@pytest.fixture
async def served(serve: Callable[..., Any]) -> Any:
    async with serve() as running:
        response = await running.client.put("/v1/catalogs/travel", json={"functions": TRAVEL})
        assert response.status_code == 200, response.text
        yield running


async def route(served: Served, text: str, **extra: Any) -> list[dict[str, Any]]:
    body = {"namespace": "travel", "messages": [{"role": "user", "content": text}], **extra}
    response = await served.client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return list(response.json()["functions"])


async def test_a_three_step_request_gets_each_steps_tool_in_a_top_three(served: Served) -> None:
    functions = await route(served, THREE_STEPS, max_functions=3)
    assert {f["name"] for f in functions} == {"book_flight", "send_email", "convert_currency"}


async def test_explain_names_the_part_and_its_terms_add_up_to_the_score(served: Served) -> None:
    functions = await route(served, THREE_STEPS, max_functions=5, explain=True)
    parts = {f["name"]: f["explanation"]["part"] for f in functions}
    # The whole turn finds the flight; each later step's tool is found for its own part.
    assert parts["send_email"] == "email the itinerary to Dana."
    assert parts["convert_currency"] == "convert 300 euros to dollars."
    for function in functions:
        terms = function["explanation"]["terms"]
        assert sum(terms.values()) == pytest.approx(function["score"], abs=1e-6)
        assert terms["usage"] == 0.0  # nothing learned yet
        assert terms["context"] == 0.0  # no session


async def test_a_sentence_that_only_sets_the_scene_takes_no_place_from_the_request(served: Served) -> None:
    # The first sentence is near no function (cosine under 0.1): it asks nothing of its own.
    text = "I am a big fan of old cathedrals and good pasta. Book a hotel in Rome for two nights."
    functions = await route(served, text, max_functions=5, explain=True)
    assert functions[0]["name"] == "book_hotel"
    assert all(f["explanation"]["part"] is None for f in functions)


async def test_a_one_part_turn_routes_as_its_whole_text(served: Served) -> None:
    functions = await route(served, "What is the weather in Oslo right now?", max_functions=3, explain=True)
    assert functions[0]["name"] == "get_weather"
    assert all(f["explanation"]["part"] is None for f in functions)
    scores = [f["score"] for f in functions]
    assert scores == sorted(scores, reverse=True)


async def test_min_score_reads_the_score_of_the_part_a_function_was_found_for(served: Served) -> None:
    functions = await route(served, THREE_STEPS, max_functions=5, explain=True)
    floor = min(f["score"] for f in functions if f["name"] in {"send_email", "convert_currency"})
    kept = await route(served, THREE_STEPS, max_functions=5, min_score=floor)
    assert {"send_email", "convert_currency"} <= {f["name"] for f in kept}
    assert all(f["score"] >= floor for f in kept)


async def test_explain_gives_each_function_the_weights_its_own_query_used(served: Served) -> None:
    session = {"role": "user", "content": "Search flights from Lisbon to Rome on Friday."}
    stored = await served.client.post("/v1/sessions/w1/messages", json={"namespace": "travel", "messages": [session]})
    assert stored.status_code == 200, stored.text
    # A vague turn (its context counts, its own words at half share) of two parts (theirs at full share).
    text = "Take the first one for John. Also add it to my Rome trip."
    functions = await route(served, text, max_functions=6, explain=True, session_id="w1")
    explained = [f["explanation"] for f in functions]
    assert explained[0]["context_weight"] > 0
    assert {e["part"] for e in explained} > {None}
    for explanation in explained:
        weights, terms = explanation["weights"], explanation["terms"]
        # What the query's own terms were divided by: 1 + w for the whole turn under its context.
        scale = 1.0 + explanation["context_weight"] if explanation["part"] is None else 1.0
        assert terms["dense"] * scale == pytest.approx(weights["dense"] * explanation["dense"], abs=1e-6)
        assert terms["lexical"] * scale == pytest.approx(weights["lexical"] * explanation["lexical"], abs=1e-6)
        assert weights["usage"] == 0.0  # no function has a usage example yet
    shares = {e["weights"]["lexical"] for e in explained}
    assert len(shares) == 2  # the whole turn's words at half the parts' share
