"""The route API through HTTP with the real model: turns, follow-ups, sessions, memories."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration


async def route(client: httpx.AsyncClient, namespace: str, text: str, **fields: Any) -> dict[str, Any]:
    response = await client.post(
        "/v1/route", json={"namespace": namespace, "messages": [{"role": "user", "content": text}], **fields}
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def names(answer: dict[str, Any]) -> list[str]:
    return [f["name"] for f in answer["functions"]]


async def post(
    client: httpx.AsyncClient, session: str, messages: list[dict[str, Any]], **fields: Any
) -> dict[str, Any]:
    response = await client.post(f"/v1/sessions/{session}/messages", json={"messages": messages, **fields})
    assert response.status_code == 200, response.text
    return dict(response.json())


CONVERSATION = [
    ("Find me flights from Lisbon to Rome next Friday", "search_flights", "I found TP 840, AZ 201 and FR 123."),
    ("Show me the seat map of TP 840", "get_seat_map", "Rows 10 to 14 have free aisle seats."),
    ("Book TP 840 for John Smith", "book_flight", "Booked: confirmation QX7Z2."),
    ("Now find a hotel near the Colosseum for those nights", "search_hotels", "Hotel Artemide has rooms."),
    ("How much is 450 euros in US dollars?", "convert_currency", "About 490 dollars."),
]


async def test_a_conversation_routes_the_right_function_turn_by_turn(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        for turn, (text, expected, reply) in enumerate(CONVERSATION):
            answer = await route(client, "travel", text, session_id="trip", user_id="ana")
            assert names(answer)[0] == expected, (turn, names(answer))
            assert [t["function"]["name"] for t in answer["tools"]] == names(answer)
            assert len(answer["history"]) == 2 * turn
            assert answer["context"] == text
            await post(
                client,
                "trip",
                [{"role": "user", "content": text}, {"role": "assistant", "content": reply}],
                user_id="ana",
                namespace="travel",
            )


async def test_a_follow_up_is_resolved_through_the_history(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        alone = await route(client, "devops", "Undo that")
        assert names(alone)[0] != "rollback_deployment"
        await post(
            client,
            "ops",
            [
                {"role": "user", "content": "Deploy version 2.4.1 of the checkout service to production"},
                {"role": "assistant", "content": "Deployment started."},
            ],
        )
        with_history = await route(client, "devops", "Undo that", session_id="ops")
        assert names(with_history)[0] == "rollback_deployment"
        assert "Deploy version 2.4.1" in with_history["recent_context"]
        no_context = await route(client, "devops", "Undo that", session_id="ops", recent_messages=0)
        assert names(no_context) == names(alone)


async def test_memories_follow_the_user_and_stay_in_their_namespace(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        stored = await post(
            client,
            "monday",
            [{"role": "user", "content": "I am vegetarian and I prefer aisle seats. Find flights to Rome."}],
            user_id="ana",
            namespace="travel",
        )
        assert stored["memories_added"] == 1
        again = await post(
            client,
            "tuesday",
            [{"role": "user", "content": "I am vegetarian and I prefer aisle seats."}],
            user_id="ana",
            namespace="travel",
        )
        assert again["memories_added"] == 0, "the same fact is remembered once"

        answer = await route(client, "travel", "Which meal can I get on my flight?", session_id="friday", user_id="ana")
        assert [m["text"] for m in answer["memories"]] == ["I am vegetarian and I prefer aisle seats."]
        assert 0 < answer["memories"][0]["score"] <= 1
        assert "vegetarian" in answer["memory_context"]

        other_user = await route(client, "travel", "Which meal can I get on my flight?", user_id="bob")
        assert other_user["memories"] == []
        assert other_user["memory_context"] == ""
        other_namespace = await route(client, "workspace", "Which meal can I get on my flight?", user_id="ana")
        assert other_namespace["memories"] == []


async def test_session_memories_without_a_user_stay_in_the_session(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        await post(client, "s1", [{"role": "user", "content": "My budget is 300 euros per night."}], namespace="travel")
        same = await route(client, "travel", "what's my budget for a hotel room?", session_id="s1")
        other = await route(client, "travel", "what's my budget for a hotel room?", session_id="s2")
        assert [m["text"] for m in same["memories"]] == ["My budget is 300 euros per night."]
        assert other["memories"] == []


async def test_only_external_user_input_becomes_memory(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        stored = await post(
            client,
            "s",
            [
                {"role": "assistant", "content": "I am vegetarian too and I love Rome."},
                {"role": "user", "content": "I live in Porto.", "source": "context_provider"},
                {"role": "user", "content": "I work at a bank.", "source": "history"},
            ],
            user_id="carla",
            namespace="travel",
        )
        assert stored == {
            "session_id": "s",
            "stored": 2,
            "memories_added": 0,
            "memories_updated": 0,
            "memories_expired": 0,
            "memories_forgotten": 0,
        }
        answer = await route(client, "travel", "Am I vegetarian? Where do I live?", user_id="carla")
        assert answer["memories"] == []
        history = (await client.get("/v1/sessions/s/messages")).json()["messages"]
        assert [(m["role"], m["source"]) for m in history] == [
            ("assistant", "external"),
            ("user", "context_provider"),
        ]


async def test_history_keeps_tool_calls_in_order_and_is_capped_in_routes(serve: Callable[..., Any]) -> None:
    call = {"id": "call_1", "type": "function", "function": {"name": "search_flights", "arguments": "{}"}}
    run = [
        {"role": "user", "content": "Flights to Rome"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "3 flights"},
        {"role": "assistant", "content": "Three flights found."},
    ]
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        assert (await post(client, "h", run))["stored"] == 4
        history = (await client.get("/v1/sessions/h/messages")).json()["messages"]
        assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
        assert history[1]["tool_calls"] == [call]
        assert history[2]["tool_call_id"] == "call_1"
        answer = await route(client, "travel", "book the cheapest", session_id="h", history_messages=2)
        assert [m["role"] for m in answer["history"]] == ["tool", "assistant"]
        assert (await client.get("/v1/sessions/unknown/messages")).json()["messages"] == []


async def test_a_retried_post_keeps_its_messages_in_place(serve: Callable[..., Any]) -> None:
    first = [
        {"id": "a1", "role": "user", "content": "Find me flights to Rome"},
        {"id": "a2", "role": "assistant", "content": "TP 840 and AZ 201."},
    ]
    second = [
        {"id": "b1", "role": "user", "content": "Find me a hotel near the Colosseum"},
        {"id": "b2", "role": "assistant", "content": "Hotel Artemide has rooms."},
    ]
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        assert (await post(client, "retry", first, namespace="travel"))["stored"] == 2
        assert (await post(client, "retry", second, namespace="travel"))["stored"] == 2
        retried = await post(client, "retry", [*first, {"id": "a3", "role": "user", "content": "Thanks!"}])

        assert retried["stored"] == 1
        history = (await client.get("/v1/sessions/retry/messages")).json()["messages"]
        assert [m["id"] for m in history] == ["a1", "a2", "b1", "b2", "a3"]
        assert history[0]["namespace"] == "travel"

        both = await asyncio.gather(*(post(client, "retry", second) for _ in range(2)))  # a retry racing its post
        assert [answer["stored"] for answer in both] == [0, 0]
        edited = await post(client, "retry", [{**first[0], "content": "Find me flights to Milan"}])
        assert edited["stored"] == 1  # the message edited: stored again, at the end
        history = (await client.get("/v1/sessions/retry/messages")).json()["messages"]
        assert [(m["id"], m["content"]) for m in history][-2:] == [
            ("a3", "Thanks!"),
            ("a1", "Find me flights to Milan"),
        ]
        assert len(history) == 5


async def test_two_posts_of_new_messages_at_once_store_them_once(serve: Callable[..., Any]) -> None:
    run = [{"id": f"m{i}", "role": "user", "content": f"message {i}"} for i in range(3)]
    async with serve(catalog=EXAMPLES) as served:
        for round_ in range(5):
            session = f"race-{round_}"
            both = await asyncio.gather(*(post(served.client, session, run) for _ in range(2)))
            assert sorted(answer["stored"] for answer in both) == [0, 3]


async def test_a_restart_keeps_sessions_and_memories(tmp_path: Path, serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        message = [{"role": "user", "content": "I prefer window seats."}]
        await post(served.client, "keep", message, user_id="dan", namespace="travel")
    async with serve(catalog=EXAMPLES) as served:
        history = (await served.client.get("/v1/sessions/keep/messages")).json()["messages"]
        assert [m["content"] for m in history] == ["I prefer window seats."]
        answer = await route(served.client, "travel", "which seat do I like?", user_id="dan", session_id="new")
        assert [m["text"] for m in answer["memories"]] == ["I prefer window seats."]


async def test_twenty_parallel_sessions_never_mix(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client

        async def session(number: int) -> None:
            for turn in range(3):
                text = f"session {number} turn {turn}: find flights to city number {number}"
                await route(client, "travel", text, session_id=f"p{number}")
                await post(client, f"p{number}", [{"role": "user", "content": text}], namespace="travel")

        await asyncio.gather(*(session(n) for n in range(20)))
        for number in range(20):
            history = (await client.get(f"/v1/sessions/p{number}/messages")).json()["messages"]
            assert [m["content"] for m in history] == [
                f"session {number} turn {t}: find flights to city number {number}" for t in range(3)
            ]


async def test_pinned_functions_come_first_and_do_not_count(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        answer = await route(client, "travel", "hotel in Rome", max_functions=2, pinned=["convert_currency"])
        assert names(answer)[0] == "convert_currency"
        assert answer["functions"][0]["pinned"] is True
        assert len(answer["functions"]) == 3
        assert not any(f["pinned"] for f in answer["functions"][1:])

        weather = {"name": "get_weather", "description": "Weather for a city.", "parameters": {"type": "object"}}
        time = {"name": "get_time", "description": "Local time in a city.", "parameters": {"type": "object"}}
        put = await client.put("/v1/catalogs/tools", json={"functions": [weather, time], "pinned": ["get_time"]})
        assert put.status_code == 200, put.text
        answer = await route(client, "tools", "is it raining in Oslo?", max_functions=1)
        assert names(answer) == ["get_time", "get_weather"]
        assert (await client.get("/v1/catalogs/tools")).json()["pinned"] == ["get_time"]


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"namespace": "nowhere", "messages": [{"role": "user", "content": "hi"}]}, 404, "nowhere"),
        ({"namespace": "travel", "messages": []}, 422, "messages"),
        ({"namespace": "travel"}, 422, "messages"),
        (
            {"namespace": "travel", "messages": [{"role": "user", "content": "hi"}], "max_functions": 0},
            422,
            "max_functions",
        ),
        ({"namespace": "travel", "messages": [{"role": "user", "content": "hi"}], "min_score": 2}, 422, "min_score"),
        (
            {"namespace": "travel", "messages": [{"role": "user", "content": "hi"}], "recent_messages": -1},
            422,
            "recent_messages",
        ),
        (
            {"namespace": "travel", "messages": [{"role": "user", "content": "hi"}], "pinned": ["nope"]},
            422,
            "pinned[0]",
        ),
        ({"namespace": "travel", "messages": [{"role": "assistant", "content": "hi"}]}, 422, "messages"),
        ({"namespace": "bad name!", "messages": [{"role": "user", "content": "hi"}]}, 422, "namespace"),
    ],
)
async def test_bad_requests_get_a_clear_error(
    serve: Callable[..., Any], body: dict[str, Any], status: int, field: str
) -> None:
    async with serve(catalog=EXAMPLES) as served:
        response = await served.client.post("/v1/route", json=body)
        assert response.status_code == status
        error = response.json()
        assert set(error) == {"error", "detail", "request_id"}
        assert error["request_id"] == response.headers["x-request-id"]
        assert field in error["detail"]


async def test_session_posts_validate_too(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        empty = await client.post("/v1/sessions/s/messages", json={"messages": []})
        assert empty.status_code == 422
        assert "messages" in empty.json()["detail"]
        unknown = await client.post(
            "/v1/sessions/s/messages", json={"messages": [{"role": "user", "content": "x"}], "namespace": "nope"}
        )
        assert unknown.status_code == 404
        assert unknown.json()["error"] == "NamespaceNotFound"
        typo = await client.post("/v1/sessions/s/messages", json={"messages": [{"role": "user", "source": "hist"}]})
        assert typo.status_code == 422
        assert typo.json()["detail"].startswith("messages[0].source: Input should be 'external', 'history'")
        assert (await client.get("/v1/sessions/s/messages")).json()["messages"] == []
        # Tool calls that are no list of calls, and ids that are no text, are refused before anything is stored.
        for extra, where in (
            ({"tool_calls": 5}, "messages[1].tool_calls: "),
            ({"tool_calls": [{"id": "c"}, "x"]}, "messages[1].tool_calls[1]: "),
            ({"id": 5}, "messages[1].id: "),
            ({"message_id": True}, "messages[1].message_id: "),
        ):
            bad = [{"role": "user", "content": "find flights"}, {"role": "assistant", **extra}]
            refused = await client.post("/v1/sessions/s/messages", json={"messages": bad})
            assert refused.status_code == 422
            assert refused.json()["detail"].startswith(where)
        assert (await client.get("/v1/sessions/s/messages")).json()["messages"] == []
        unset = await client.post("/v1/sessions/s/messages", json={"messages": [{"role": "user", "source": None}]})
        assert unset.json()["stored"] == 1  # null: the default, external
        assert (await client.get("/v1/sessions/s/messages")).json()["messages"][0]["source"] == "external"


async def test_one_id_twice_in_a_post_is_stored_once_as_its_later_form(serve: Callable[..., Any]) -> None:
    async with serve() as served:
        client = served.client
        posted = [
            {"id": "m1", "role": "user", "content": "Flights to Rome"},
            {"id": "m1", "role": "user", "content": "Flights to Milan"},
            {"id": "m2", "role": "user", "content": "On Friday"},
            {"id": "m2", "role": "user", "content": "On Friday"},
        ]
        stored = await post(client, "twice", posted)
        assert stored["stored"] == 2
        messages = (await client.get("/v1/sessions/twice/messages")).json()["messages"]
        assert [m["content"] for m in messages] == ["Flights to Milan", "On Friday"]


async def test_the_openapi_document_lists_every_response_with_examples(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        spec = (await client.get("/openapi.json")).json()
        route_op = spec["paths"]["/v1/route"]["post"]
        assert {"200", "404", "422", "503"} <= set(route_op["responses"])
        assert spec["components"]["schemas"]["RouteIn"]["examples"]
        assert spec["components"]["schemas"]["SessionMessagesIn"]["examples"]
        docs = await client.get("/docs")
        assert docs.status_code == 200
        assert "swagger" in docs.text.lower()


async def test_route_history_is_plain_chat_messages(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        await post(client, "plain", [{"role": "user", "content": "Flights to Rome", "id": "m1"}], user_id="eve")
        answer = await route(client, "travel", "cheapest one", session_id="plain")
        assert answer["history"] == [{"role": "user", "content": "Flights to Rome", "id": "m1"}]
        stored = (await client.get("/v1/sessions/plain/messages")).json()["messages"][0]
        assert {"source", "seq", "stored_at", "session_id", "user_id"} <= set(stored)


async def test_memories_posted_without_a_namespace_hold_in_every_namespace(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        assert (await post(client, "g", [{"role": "user", "content": "My name is Frida Kahlo."}], user_id="fk"))[
            "memories_added"
        ] == 1
        for namespace in ("travel", "workspace"):
            answer = await route(client, namespace, "what is my name?", user_id="fk")
            assert [m["text"] for m in answer["memories"]] == ["My name is Frida Kahlo."]


async def test_a_session_can_be_read_in_part_and_forgotten(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        client = served.client
        messages = [{"role": "user", "content": f"message {i}"} for i in range(5)]
        messages.append({"role": "user", "content": "I am allergic to peanuts."})
        await post(client, "gone", messages, namespace="travel")
        last = (await client.get("/v1/sessions/gone/messages", params={"limit": 2})).json()["messages"]
        assert [m["content"] for m in last] == ["message 4", "I am allergic to peanuts."]
        assert (await route(client, "travel", "any allergies?", session_id="gone"))["memories"]

        deleted = await client.delete("/v1/sessions/gone")
        assert deleted.json() == {"session_id": "gone", "deleted": 6}
        assert (await client.get("/v1/sessions/gone/messages")).json()["messages"] == []
        assert (await route(client, "travel", "any allergies?", session_id="gone"))["memories"] == []


async def test_unknown_paths_and_methods_answer_in_the_error_shape(serve: Callable[..., Any]) -> None:
    async with serve(catalog=EXAMPLES) as served:
        missing = await served.client.get("/v1/nothing")
        assert missing.status_code == 404
        assert missing.json() == {
            "error": "NotFound",
            "detail": "Not Found",
            "request_id": missing.headers["x-request-id"],
        }
        wrong = await served.client.patch("/v1/route")
        assert wrong.status_code == 405
        assert wrong.json()["error"] == "MethodNotAllowed"
