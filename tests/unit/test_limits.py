"""What a request body may hold: counts, string length, nesting and NUL characters, each error naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.api.limits import body_limit
from router.catalog.limits import MIB, LimitSettings, _name_the_field, _within, check_document
from router.common.errors import InvalidRequest

LIMITS = LimitSettings(messages=3, functions=2, text_chars=20, depth=5)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_defaults() -> None:
    limits = LimitSettings()

    assert (limits.body_bytes, limits.catalog_bytes) == (MIB, 32 * MIB)
    assert (limits.messages, limits.functions, limits.text_chars, limits.depth) == (1000, 10_000, 100_000, 64)


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_LIMIT_BODY_BYTES", "4096")
    monkeypatch.setenv("ROUTER_LIMIT_FUNCTIONS", "50000")

    limits = LimitSettings()

    assert (limits.body_bytes, limits.functions) == (4096, 50_000)


def test_a_body_within_limits_passes() -> None:
    check_document({"messages": [user("01234567890123456789")] * 3, "namespace": "travel", "max_functions": 3}, LIMITS)
    check_document({"functions": [{"a": {"b": {"c": 1}}}] * 2}, LIMITS)
    check_document([1, "x", None, 2.5], LIMITS)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"messages": [user("hi")] * 4}, "messages: 4 messages; at most 3 per request (ROUTER_LIMIT_MESSAGES)"),
        ({"functions": [{}] * 3}, "functions: 3 functions; at most 2 per catalog (ROUTER_LIMIT_FUNCTIONS)"),
        (
            {"messages": [user("hi"), user("x" * 21)]},
            "messages[1].content: the text has 21 characters; at most 20 (ROUTER_LIMIT_TEXT_CHARS)",
        ),
        ({"messages": [user("a\x00b")]}, r"messages[0].content: the text contains a NUL character (\u0000)"),
        (
            {"functions": [{"name": "f", "parameters": {"properties": {"x\x00": {}}}}]},
            r"functions[0].parameters.properties: a field name contains a NUL character (\u0000)",
        ),
        ({"pinned": ["ok", "no\x00"]}, r"pinned[1]: the text contains a NUL character (\u0000)"),
        ("\x00", r"body: the text contains a NUL character (\u0000)"),
        (
            {"a": {"b": [{"c": {"d": [1]}}]}},
            "a.b[0].c.d: nested deeper than 5 levels (ROUTER_LIMIT_DEPTH)",
        ),
    ],
)
def test_each_limit_names_the_field_and_the_setting(document: Any, message: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        check_document(document, LIMITS)

    assert caught.value.detail == message
    assert caught.value.status_code == 422


def test_the_first_problem_in_document_order_is_named() -> None:
    document = {"messages": [user("fine"), user("bad\x00"), user("also\x00bad")]}

    with pytest.raises(InvalidRequest, match=r"^messages\[1\]\.content"):
        check_document(document, LIMITS)


def test_a_very_deep_document_is_refused_without_recursion() -> None:
    document: Any = "leaf"
    for _ in range(100_000):
        document = [document]

    with pytest.raises(InvalidRequest, match=r"nested deeper than 64 levels"):
        check_document(document, LimitSettings())


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("PUT", "/v1/catalogs/travel", (32 * MIB, "ROUTER_LIMIT_CATALOG_BYTES")),
        ("POST", "/v1/route", (MIB, "ROUTER_LIMIT_BODY_BYTES")),
        ("POST", "/v1/sessions/s/messages", (MIB, "ROUTER_LIMIT_BODY_BYTES")),
        ("GET", "/v1/catalogs/travel", (MIB, "ROUTER_LIMIT_BODY_BYTES")),
    ],
)
def test_catalog_puts_have_their_own_byte_limit(method: str, path: str, expected: tuple[int, str]) -> None:
    assert body_limit({"type": "http", "method": method, "path": path}, LimitSettings()) == expected


strings = st.text(alphabet=st.sampled_from(["a", "é", "\x00", '"', "\\"]), max_size=24)
documents = st.recursive(
    st.none() | st.integers() | strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(documents)
def test_the_quick_walk_passes_exactly_what_the_named_walk_passes(document: Any) -> None:
    limits = LimitSettings(text_chars=20, depth=4)
    try:
        _name_the_field(document, limits)
        named = True
    except InvalidRequest:
        named = False
    quick = _within(document, 0, limits.depth, limits.text_chars) if isinstance(document, dict | list) else named
    assert quick == named
