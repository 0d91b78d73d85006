"""A call is checked against the route of its own turn, and searches of the session after it."""

from __future__ import annotations

from router.sessions.routes import Call, Misses, RouteRecord, check

FIRST = RouteRecord("s", "ops", "route", "first", ("a",), pinned=("p",), seq=10)
FOUND = RouteRecord("s", "ops", "search", "find c", ("c",), seq=15)
SECOND = RouteRecord("s", "ops", "route", "second", ("b",), seq=20)
RECORDS = [SECOND, FOUND, FIRST]


def outcome(name: str, request: str, seq: int = 30) -> str:
    return check([Call(seq, "k", name, request)], RECORDS)[0].outcome


def test_the_route_whose_request_is_the_calls_own_decides() -> None:
    assert [outcome("a", "first"), outcome("p", "first"), outcome("b", "first")] == ["routed", "routed", "missed"]


def test_without_a_matching_request_the_latest_route_before_the_call_decides() -> None:
    assert [outcome("b", "other"), outcome("a", "other"), outcome("a", "other", seq=12)] == [
        "routed",
        "missed",
        "routed",
    ]


def test_a_search_after_the_route_and_before_the_call_finds_a_function() -> None:
    assert [outcome("c", "first"), outcome("c", "second"), outcome("c", "first", seq=14)] == [
        "searched",
        "missed",
        "missed",
    ]


def test_a_call_before_any_route_is_unchecked() -> None:
    checked = check([Call(5, "k", "a", "first")], RECORDS)
    assert (checked[0].outcome, checked[0].route) == ("unchecked", None)
    assert check([Call(50, "k", "c", "x")], [FOUND])[0].outcome == "unchecked"


def test_the_miss_rate_is_over_checked_calls() -> None:
    assert Misses({"routed": 2, "searched": 1, "missed": 1}, [], []).rate == 0.25
    assert Misses({"routed": 0, "searched": 0, "missed": 0}, [], []).rate is None
