"""A call's outcome, read from the result the stored messages hold for it."""

from __future__ import annotations

from typing import Any

import pytest

from router.retrieval.runs import failed, run_calls

ROLES = ("user",)


def outcomes(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(c.name, c.outcome) for c in run_calls(messages, roles=ROLES)]


def call(name: str, call_id: str) -> dict[str, Any]:
    return {"role": "assistant", "tool_calls": [{"id": call_id, "function": {"name": name, "arguments": "{}"}}]}


@pytest.mark.parametrize(
    "text",
    [
        "Error: Argument parsing failed.",
        "error: no such city",
        "Error 404: not found",
        "ValueError: invalid date",
        "An error occurred while running the tool. Please try again.",
        "Traceback (most recent call last):\n  File ...",
        '{"error": "rate limited"}',
        '{"content": [{"type": "text", "text": "bad"}], "isError": true}',
    ],
)
def test_error_reports_fail(text: str) -> None:
    assert failed({"role": "tool"}, text)


@pytest.mark.parametrize(
    "text",
    [
        "No errors found in the config.",
        "The error rate fell to 2% last week.",
        "Errors: 0",
        '{"error": null, "result": 3}',
        '{"temperature": 21}',
        "Sent.",
    ],
)
def test_answers_that_mention_errors_succeed(text: str) -> None:
    assert not failed({"role": "tool"}, text)


def test_a_deeply_nested_answer_is_an_answer() -> None:
    nested = '{"a": ' * 20_000 + "1" + "}" * 20_000  # deeper than json can parse
    assert not failed({"role": "tool"}, nested)


def test_flags_fail_whatever_the_text() -> None:
    assert failed({"type": "tool_result", "is_error": True}, "ok")
    assert failed({"role": "tool", "status": "error"}, "ok")
    assert failed({"role": "tool"}, {"content": [], "isError": True})
    assert failed({"role": "tool"}, [{"type": "text", "text": "Error: Function failed."}])


def test_each_shape_pairs_a_call_with_its_result() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "find flights to Rome"},
        call("search_flights", "a"),
        call("get_prices", "b"),
        {"role": "tool", "tool_call_id": "b", "content": "Error: timeout"},
        {"role": "tool", "tool_call_id": "a", "content": "3 found"},
        {"type": "function_call", "call_id": "r1", "name": "book_flight", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "r1", "output": "booked"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "send_email", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x", "is_error": True}]},
        {"role": "assistant", "function_call": {"name": "legacy", "arguments": "{}"}},
        {"role": "function", "name": "legacy", "content": "fine"},
        call("waiting", "w"),
    ]
    assert outcomes(messages) == [
        ("search_flights", "succeeded"),
        ("get_prices", "failed"),
        ("book_flight", "succeeded"),
        ("send_email", "failed"),
        ("legacy", "succeeded"),
        ("waiting", "pending"),
    ]


def test_a_reused_call_id_answers_the_latest_call() -> None:
    messages = [
        {"role": "user", "content": "what is the weather"},
        call("get_weather", "call_0"),
        {"role": "tool", "tool_call_id": "call_0", "content": "Error: no city"},
        call("get_weather", "call_0"),
        {"role": "tool", "tool_call_id": "call_0", "content": "sunny"},
    ]
    assert outcomes(messages) == [("get_weather", "failed"), ("get_weather", "succeeded")]


def test_a_call_uses_an_earlier_result_only_by_a_value_the_request_does_not_hold() -> None:
    def called(name: str, arguments: str, result: str) -> list[dict[str, Any]]:
        asked = {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": name, "arguments": arguments}}]}
        return [asked, {"role": "tool", "tool_call_id": "c1", "content": result}]

    messages = [
        {"role": "user", "content": "Reserve the cheapest room in Madrid for 3 nights"},
        *called("search_hotels", '{"city": "Madrid", "nights": 3}', '{"hotels": [{"id": 2231, "city": "Madrid"}]}'),
        *called("book_hotel", '{"hotel_id": 2231, "city": "Madrid", "nights": 3}', "ok"),
        *called("get_weather", '{"city": "Madrid", "days": "223"}', "sunny"),
    ]
    search, book, weather = run_calls(messages, roles=ROLES)
    assert book.uses(search)
    # "Madrid" and 3 are the request's; 223 is only part of a number the search returned.
    assert not weather.uses(search)
    # A lone word turns up in any result: "USD" after a rate lookup is no step that used it.
    rates = [
        {"role": "user", "content": "Find me a hotel in Paris"},
        *called("get_exchange_rate", '{"base": "EUR"}', "1 EUR = 1.08 USD"),
        *called("search_hotels", '{"city": "Paris", "currency": "USD", "sort": "price"}', "[]"),
    ]
    rate, hotels = run_calls(rates, roles=ROLES)
    assert not hotels.uses(rate)


def test_values_and_results_are_read_in_every_shape() -> None:
    anthropic = [
        {"role": "user", "content": "Cancel my last order"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "list_orders", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "Order A-7731"}]}
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t2", "name": "cancel_order", "input": {"order": {"id": "a-7731"}}}],
        },
    ]
    listed, cancelled = run_calls(anthropic, roles=ROLES)
    assert cancelled.uses(listed)
    responses = [
        {"role": "user", "content": "Cancel my last order"},
        {"type": "function_call", "call_id": "r1", "name": "list_orders", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "r1", "output": '{"orders": ["A-7731"]}'},
        {"type": "function_call", "call_id": "r2", "name": "cancel_order", "arguments": '{"ids": ["A-7731"]}'},
    ]
    listed, cancelled = run_calls(responses, roles=ROLES)
    assert cancelled.uses(listed)
    # Arguments that are no JSON carry no values.
    broken = [*responses[:3], {**responses[3], "arguments": '{"ids": ["A-7731"'}]
    assert not run_calls(broken, roles=ROLES)[1].uses(listed)


def test_a_result_written_with_escapes_is_read_as_its_text() -> None:
    messages = [
        {"role": "user", "content": "Book the nicest hotel in Paris"},
        call("search_hotels", "c1"),
        {"role": "tool", "tool_call_id": "c1", "content": '{"name": "H\\u00f4tel \\u00c9lys\\u00e9e"}'},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c2", "function": {"name": "book_hotel", "arguments": '{"name": "Hôtel Élysée"}'}}],
        },
    ]
    search, book = run_calls(messages, roles=ROLES)
    assert book.uses(search)


@pytest.mark.parametrize("listed", [5, True, 1.5, "search", {"id": "c"}])
def test_tool_calls_that_are_no_list_call_nothing(listed: Any) -> None:
    # Stored before the API refused them: reading them must not fail the session's later posts.
    messages = [{"role": "user", "content": "find flights"}, {"role": "assistant", "tool_calls": listed}]
    assert run_calls(messages, roles=("user",)) == []
