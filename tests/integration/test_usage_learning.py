"""Learning from usage, end to end: a stored tool call makes its function rank higher for similar requests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from router.retrieval import examples as examples_module
from router.retrieval.examples import Example
from router.retrieval.learning import called_functions, clauses, usage_examples
from router.routing.settings import RouteSettings
from router.routing.turns import TurnRouter
from tests.conftest import Served, bare

pytestmark = pytest.mark.integration

EMAIL = bare("send_email", "Send an email message.", to="Recipient", body="Text")
SLACK = bare("post_slack_message", "Post a message to a chat channel.", channel="Channel", text="Text")
JIRA = bare("create_jira_issue", "Open a ticket in the tracker.", summary="Summary")
PAGE = bare("page_oncall", "Page the on-call engineer.", severity="Severity")
WEATHER = bare("get_weather", "Current weather for a city.", city="City")
CATALOG = [EMAIL, SLACK, JIRA, PAGE, WEATHER]
ASKED = "give the crew a heads-up about the maintenance window"
# The same request in other words: one stored run speaks for it (a wider neighbourhood needs runs that agree).
LATER = "give the crew a heads up about tonight's maintenance window"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def calls(*names: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": "{}"}}
            for i, name in enumerate(names)
        ],
    }


def answered(*names: str, content: str = "done") -> list[dict[str, Any]]:
    """A message calling ``names`` and a successful result for each (a call teaches once its result is seen)."""
    results = [{"role": "tool", "tool_call_id": f"call_{i}", "content": content} for i in range(len(names))]
    return [calls(*names), *results]


async def ranking(client: httpx.AsyncClient, text: str) -> list[str]:
    body = {"namespace": "ops", "messages": [user(text)], "max_functions": len(CATALOG)}
    response = await client.post("/v1/route", json=body)
    assert response.status_code == 200, response.text
    return [f["name"] for f in response.json()["functions"]]


async def post_run(
    client: httpx.AsyncClient, session: str, messages: list[dict[str, Any]], *, namespace: str = "ops"
) -> None:
    body = {"namespace": namespace, "messages": messages}
    response = await client.post(f"/v1/sessions/{session}/messages", json=body)
    assert response.status_code == 200, response.text


def examples(served: Served) -> int:
    store = served.runtime.service.index.store.examples
    assert store is not None
    return store.count("ops")


@pytest.fixture
async def ops(serve: Callable[..., Any]) -> Any:
    async with serve() as served:
        response = await served.client.put("/v1/catalogs/ops", json={"functions": CATALOG})
        assert response.status_code == 200
        yield served


async def test_a_called_function_rises_for_similar_requests(ops: Served) -> None:
    before = await ranking(ops.client, LATER)
    await post_run(ops.client, "s1", [user(ASKED), calls("send_email"), {"role": "tool", "content": "sent"}])
    after = await ranking(ops.client, LATER)

    assert before.index("send_email") >= 2
    assert after[0] == "send_email"
    assert examples(ops) == 1


async def test_the_request_may_come_in_an_earlier_post_of_the_session(ops: Served) -> None:
    await post_run(ops.client, "s2", [user(ASKED)])
    await post_run(ops.client, "s2", [calls("send_email")])
    assert examples(ops) == 0  # its result is not known yet
    await post_run(ops.client, "s2", [{"role": "tool", "tool_call_id": "call_0", "content": "sent"}])

    assert (await ranking(ops.client, LATER))[0] == "send_email"
    store = ops.runtime.service.index.store.examples
    assert store is not None
    assert store.texts("ops", "send_email") == [ASKED]


async def test_examples_never_count_as_functions(ops: Served) -> None:
    await post_run(ops.client, "s3", [user(ASKED), calls("send_email")])

    catalog = (await ops.client.get("/v1/catalogs/ops")).json()
    listed = {c["namespace"]: c["count"] for c in (await ops.client.get("/v1/catalogs")).json()["catalogs"]}
    assert sorted(f["name"] for f in catalog["functions"]) == sorted(f["name"] for f in CATALOG)
    assert listed["ops"] == len(CATALOG)
    assert ops.runtime.service.index.store.count("ops") == len(CATALOG)


async def test_a_changed_or_removed_function_forgets_its_examples(ops: Served) -> None:
    await post_run(ops.client, "s4", [user(ASKED), *answered("send_email", "create_jira_issue")])
    assert examples(ops) == 2

    changed = {**EMAIL, "description": "Send an email message to one recipient."}
    await ops.client.put("/v1/catalogs/ops", json={"functions": [changed, SLACK, JIRA, PAGE, WEATHER]})
    assert examples(ops) == 1
    await ops.client.put("/v1/catalogs/ops", json={"functions": [changed, SLACK, PAGE, WEATHER]})
    assert examples(ops) == 0


async def test_unknown_functions_and_runs_without_calls_teach_nothing(ops: Served) -> None:
    await post_run(ops.client, "s5", [user(ASKED), *answered("no_such_function")])
    await post_run(ops.client, "s6", [user(ASKED), {"role": "assistant", "content": "Done."}])
    assert examples(ops) == 0


async def test_each_function_of_a_multi_call_turn_learns_its_own_clause(ops: Served) -> None:
    request = "Email the quarterly numbers to Dana. Then open a ticket for the broken export button."
    await post_run(ops.client, "s7", [user(request), *answered("send_email", "create_jira_issue")])

    store = ops.runtime.service.index.store.examples
    assert store is not None
    assert store.texts("ops", "send_email") == ["Email the quarterly numbers to Dana."]
    assert store.texts("ops", "create_jira_issue") == ["open a ticket for the broken export button."]


async def test_learning_can_be_turned_off(ops: Served) -> None:
    runtime = ops.runtime
    quiet = TurnRouter(runtime.service.catalogs, RouteSettings(learn_from_usage=False))
    await quiet.record("s8", [user(ASKED), *answered("send_email")], user_id=None, namespace="ops")
    assert examples(ops) == 0


async def test_near_duplicate_requests_merge_and_a_full_function_replaces_its_nearest_example(
    ops: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ops.runtime.service.index.store.examples
    assert store is not None
    await post_run(
        ops.client, "dup-0", [user("give the crew a heads-up about the maintenance window"), *answered("send_email")]
    )
    await post_run(
        ops.client, "dup-1", [user("give the crew a heads-up about the maintenance window!"), *answered("send_email")]
    )
    assert store.texts("ops", "send_email") == ["give the crew a heads-up about the maintenance window"]

    monkeypatch.setattr(examples_module, "MAX_EXAMPLES", 2)
    await post_run(ops.client, "far-0", [user("email the invoice for March to accounting"), *answered("send_email")])
    await post_run(
        ops.client, "far-1", [user("give the crew a heads-up about the network outage"), *answered("send_email")]
    )
    kept = store.texts("ops", "send_email")
    # The full function kept its invoice example and swapped the heads-up one for the newer, nearest one.
    assert sorted(kept) == [
        "email the invoice for March to accounting",
        "give the crew a heads-up about the network outage",
    ]


def test_calls_are_read_in_every_shape() -> None:
    assert called_functions(calls("a", "b", "a")) == ["a", "b"]
    assert called_functions({"role": "assistant", "function_call": {"name": "legacy"}}) == ["legacy"]
    anthropic = {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "name": "t"}]}
    assert called_functions(anthropic) == ["t"]
    assert called_functions(user("no calls")) == []


def test_each_call_pairs_with_the_request_of_its_turn() -> None:
    messages = [
        user("find flights to Rome"),
        calls("search_flights"),
        {"role": "tool", "content": "[...]"},
        calls("get_prices"),
        {"role": "assistant", "content": "Here they are."},
        user("book the first one"),
        user("for two people"),
        calls("book_flight"),
    ]
    assert usage_examples(messages, roles=("user",)) == [
        Example("search_flights", "find flights to Rome"),
        Example("get_prices", "find flights to Rome"),
        Example("book_flight", "book the first one\nfor two people"),
    ]
    assert usage_examples(messages, roles=("user",), start=5) == [
        Example("book_flight", "book the first one\nfor two people")
    ]
    assert usage_examples([calls("orphan")], roles=("user",)) == []


def test_clauses_split_requests_that_ask_for_several_things() -> None:
    assert clauses("Book a flight to Rome. Also, convert 100 euros to dollars.") == [
        "Book a flight to Rome.",
        "convert 100 euros to dollars.",
    ]
    assert clauses("Ask Mr. Smith about the contract and then email the summary") == [
        "Ask Mr. Smith about the contract",
        "email the summary",
    ]
    assert clauses("hi") == ["hi"]


def failed_result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


async def test_a_failed_call_teaches_nothing(ops: Served) -> None:
    await post_run(
        ops.client,
        "e1",
        [user(ASKED), calls("page_oncall"), failed_result("call_0", "Error: Argument parsing failed.")],
    )
    anthropic = [
        user(ASKED),
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "tu_1", "name": "create_jira_issue", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "no", "is_error": True}],
        },
    ]
    await post_run(ops.client, "e2", anthropic)
    await post_run(
        ops.client, "e3", [user(ASKED), calls("get_weather"), {**failed_result("call_0", "boom"), "status": "error"}]
    )
    assert examples(ops) == 0
    # "error" inside a normal answer is a success.
    await post_run(
        ops.client, "e4", [user(ASKED), *answered("send_email", content="Sent; the error rate note is attached.")]
    )
    assert examples(ops) == 1


async def test_a_step_that_failed_is_not_taught_to_the_step_that_succeeded(ops: Served) -> None:
    request = "Email the quarterly numbers to Dana. Then open a ticket for the broken export button."
    ran = [calls("send_email", "create_jira_issue"), failed_result("call_0", "sent")]
    await post_run(ops.client, "f1", [user(request), *ran, failed_result("call_1", "Error: project not found")])

    store = ops.runtime.service.index.store.examples
    assert store is not None
    assert store.texts("ops", "send_email") == ["Email the quarterly numbers to Dana."]
    assert store.texts("ops", "create_jira_issue") == []


async def test_a_call_that_failed_and_was_tried_again_claims_no_part(ops: Served) -> None:
    request = "I just got back from the release review. Post the notes to the team channel."
    tried = [calls("post_slack_message"), failed_result("call_0", "Error: channel not found")]
    await post_run(ops.client, "f2", [user(request), *tried, calls("send_email"), failed_result("call_0", "sent")])

    store = ops.runtime.service.index.store.examples
    assert store is not None
    assert store.texts("ops", "send_email") == [request]
    assert store.texts("ops", "post_slack_message") == []


async def test_a_corrected_call_teaches_the_correction(ops: Served) -> None:
    await post_run(ops.client, "c1", [user(ASKED), calls("post_slack_message"), failed_result("call_0", "posted")])
    assert examples(ops) == 1
    # The model thought better of it in the same turn: the later call for the same request is what it teaches.
    await post_run(ops.client, "c1", [calls("send_email"), failed_result("call_0", "sent")])

    store = ops.runtime.service.index.store.examples
    assert store is not None
    assert store.texts("ops", "send_email") == [ASKED]
    assert store.texts("ops", "post_slack_message") == []


SEARCH_HOTELS = bare("search_hotels", "Find hotels in a city with prices.", city="City", nights="Nights")
BOOK_HOTEL = bare("book_hotel", "Reserve a room at a hotel.", hotel_id="Hotel id", nights="Nights")
AIRPORT = bare("get_airport_status", "Delays and closures at an airport.", airport="Airport code")


def called(name: str, arguments: str, result: str) -> list[dict[str, Any]]:
    """A message calling ``name`` with ``arguments`` (JSON) and its successful ``result``."""
    call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": result},
    ]


async def test_a_later_call_that_uses_an_earlier_result_is_the_next_step(serve: Callable[..., Any]) -> None:
    tasks = [
        ("Find a hotel in Madrid for three nights and reserve the cheapest room", "Madrid", "H-2231"),
        ("Look up hotels in Lisbon for two nights and book the best rated one", "Lisbon", "L-17"),
        ("Search hotels in Vienna for the weekend and reserve the cheapest", "Vienna", "W-930"),
    ]
    async with serve() as served:
        catalog = {"functions": [SEARCH_HOTELS, BOOK_HOTEL, AIRPORT, WEATHER]}
        assert (await served.client.put("/v1/catalogs/trips", json=catalog)).status_code == 200
        for i, (request, city, hotel) in enumerate(tasks):
            found = f'[{{"hotel_id": "{hotel}", "name": "Hostal Sol", "price": 80}}, {{"hotel_id": "X-87"}}]'
            run = [
                user(request),
                *called("search_hotels", f'{{"city": "{city}", "nights": 3}}', found),
                *called("book_hotel", f'{{"hotel_id": "{hotel}", "nights": 3}}', "Booked."),
            ]
            body = {"namespace": "trips", "messages": run}
            assert (await served.client.post(f"/v1/sessions/t{i}/messages", json=body)).status_code == 200
        # A wrong call corrected by one whose values all come from the request teaches only the correction.
        wrong = "Find me a hotel in Paris for two nights"
        run = [
            user(wrong),
            *called("get_airport_status", '{"airport": "CDG"}', "CDG (Paris): on time, 2 runways open"),
            *called("search_hotels", '{"city": "Paris", "nights": 2}', '[{"hotel_id": "P-10"}]'),
        ]
        body = {"namespace": "trips", "messages": run}
        assert (await served.client.post("/v1/sessions/wrong/messages", json=body)).status_code == 200

        store = served.runtime.service.index.store.examples
        assert store is not None
        # Both steps learn, each its own words: the functions called say that "and" joined two steps.
        assert "reserve the cheapest room" in store.texts("trips", "book_hotel")
        searched = store.texts("trips", "search_hotels")
        assert "Find a hotel in Madrid for three nights" in searched
        assert wrong in searched
        assert store.texts("trips", "get_airport_status") == []
        body = {"namespace": "trips", "messages": [user("Look for hotels in Prague this weekend")]}
        ranked = (await served.client.post("/v1/route", json=body)).json()["functions"]
        assert ranked[0]["name"] == "search_hotels"


async def test_continued_calls_teach_in_one_part_and_in_posts_one_by_one(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        catalog = {"functions": [SEARCH_HOTELS, BOOK_HOTEL, AIRPORT, WEATHER]}
        assert (await served.client.put("/v1/catalogs/trips", json=catalog)).status_code == 200

        async def post(session: str, messages: list[dict[str, Any]]) -> None:
            await post_run(served.client, session, messages, namespace="trips")

        # One part, no "and": the booking used the search's id, so both learn the request.
        whole = "Reserve the cheapest hotel in Lisbon for Friday"
        await post(
            "one",
            [
                user(whole),
                *called("search_hotels", '{"city": "Lisbon"}', '[{"hotel_id": "L-17", "price": 70}]'),
                *called("book_hotel", '{"hotel_id": "L-17"}', "Booked."),
            ],
        )
        # The same wrong function twice (the second with the first's answer), then the correction.
        wrong = "Find me a hotel in Paris for two nights"
        await post(
            "retried",
            [
                user(wrong),
                *called("get_airport_status", '{"airport": "CDG"}', "CDG closed, try ORY-2"),
                *called("get_airport_status", '{"airport": "ORY-2"}', "ORY-2 open"),
                *called("search_hotels", '{"city": "Paris", "nights": 2}', '[{"hotel_id": "P-10"}]'),
            ],
        )
        # A live agent posts each step as it goes: the search taught the whole request before the booking came.
        split = "Find a hotel in Madrid for three nights and reserve the cheapest room"
        found = called("search_hotels", '{"city": "Madrid"}', '[{"hotel_id": "H-2231"}]')
        await post("steps", [user(split), *found])
        await post("steps", called("book_hotel", '{"hotel_id": "H-2231"}', "Booked."))

        store = served.runtime.service.index.store.examples
        assert store is not None
        assert sorted(store.texts("trips", "search_hotels")) == sorted(
            [whole, wrong, "Find a hotel in Madrid for three nights"]
        )
        assert sorted(store.texts("trips", "book_hotel")) == sorted([whole, "reserve the cheapest room"])
        assert store.texts("trips", "get_airport_status") == []


async def test_a_step_posted_later_is_kept_beside_the_earlier_one_and_brings_no_deleted_example_back(
    serve: Callable[..., Any],
) -> None:
    request = "Reserve the cheapest hotel in Lisbon for Friday"
    search = called("search_hotels", '{"city": "Lisbon"}', '[{"hotel_id": "L-17", "price": 70}]')
    book = called("book_hotel", '{"hotel_id": "L-17"}', "Booked.")
    async with serve() as served:
        catalog = {"functions": [SEARCH_HOTELS, BOOK_HOTEL, AIRPORT, WEATHER]}
        assert (await served.client.put("/v1/catalogs/trips", json=catalog)).status_code == 200

        async def post(session: str, messages: list[dict[str, Any]]) -> None:
            await post_run(served.client, session, messages, namespace="trips")

        async def listed() -> dict[str, list[str]]:
            response = await served.client.get("/v1/catalogs/trips/examples")
            assert response.status_code == 200, response.text
            return {e["function"]: e["called_with"] for e in response.json()["examples"]}

        # A live agent posts each step as it goes: the search's example learns of the booking that followed.
        await post("steps", [user(request), *search])
        assert await listed() == {"search_hotels": []}
        await post("steps", book)
        assert await listed() == {"search_hotels": ["book_hotel"], "book_hotel": ["search_hotels"]}

        # An example deleted between two posts of a run stays deleted.
        assert (await served.client.delete("/v1/catalogs/trips/examples")).status_code == 200
        await post("again", [user(request), *search])
        listed_ids = (await served.client.get("/v1/catalogs/trips/examples")).json()["examples"]
        assert [e["function"] for e in listed_ids] == ["search_hotels"]
        deleted = await served.client.delete(f"/v1/catalogs/trips/examples/{listed_ids[0]['id']}")
        assert deleted.status_code == 200, deleted.text
        await post("again", book)
        assert await listed() == {"book_hotel": ["search_hotels"]}

        # The same for a request learning cuts into steps, and a later post changes the kept step no more.
        assert (await served.client.delete("/v1/catalogs/trips/examples")).status_code == 200
        split = "Find a hotel in Lisbon for three nights and reserve the cheapest room"
        weather = called("get_weather", '{"city": "Lisbon"}', "Sunny, 24 C.")
        await post("split", [user(split), *search])
        await post("split", book)
        steps = (await served.client.get("/v1/catalogs/trips/examples")).json()["examples"]
        assert [(e["function"], e["request"]) for e in steps] == [
            ("search_hotels", "Find a hotel in Lisbon for three nights"),
            ("book_hotel", "reserve the cheapest room"),
        ]
        await post("split", weather)
        again = (await served.client.get("/v1/catalogs/trips/examples")).json()["examples"]
        assert [(e["id"], e["stored_at"]) for e in again[:2]] == [(e["id"], e["stored_at"]) for e in steps]
        assert again[0]["called_with"] == ["book_hotel", "get_weather"]
        await post("cut", [user(split), *search])
        cut = (await served.client.get("/v1/catalogs/trips/examples", params={"function": "search_hotels"})).json()
        latest = cut["examples"][-1]
        assert latest["request"] == split
        assert (await served.client.delete(f"/v1/catalogs/trips/examples/{latest['id']}")).status_code == 200
        await post("cut", book)
        await post("cut", weather)
        kept = (await served.client.get("/v1/catalogs/trips/examples", params={"function": "search_hotels"})).json()
        assert [e["id"] for e in kept["examples"]] == [e["id"] for e in cut["examples"][:-1]]
