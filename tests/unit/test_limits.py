"""What a request body may hold: counts, string length, nesting and NUL characters, each error naming the field."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest

from router.errors import InvalidRequest
from router.limits import MIB, LimitSettings, body_limit, check_document
from router.limits_scan import within_limits

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


def _walk_passes(document: Any, limits: LimitSettings) -> bool:
    try:
        check_document(document, limits)
    except InvalidRequest:
        return False
    return True


def _random_document(rng: random.Random, depth: int) -> Any:
    """Strings full of what a byte scan could mistake: quotes, backslashes, brackets, escapes."""
    pieces = ['"', "\\", "[", "]", "{", "}", "a", "é", "\u0000"[1:], "\n", " "]
    if depth >= 7 or rng.random() < 0.3:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 24)))
    if rng.random() < 0.5:
        return [_random_document(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_random_document(rng, 7): _random_document(rng, depth + 1) for _ in range(rng.randint(0, 3))}


@pytest.mark.parametrize("dumps", [orjson.dumps, lambda d: json.dumps(d).encode()])
def test_what_the_byte_scan_passes_the_walk_passes_too(dumps: Any) -> None:
    rng = random.Random(7)  # noqa: S311 - a repeatable sample, not a secret
    limits = LimitSettings(text_chars=20, depth=5)
    agreed = 0
    for _ in range(3000):
        document = _random_document(rng, 0)
        scanned, walked = within_limits(dumps(document), limits), _walk_passes(document, limits)
        assert walked or not scanned, document  # never a pass the walk would refuse
        agreed += scanned == walked
    assert agreed > 1500  # and mostly the same answer: the scan spares the walk


@pytest.mark.parametrize(
    ("document", "scanned"),
    [
        ({"a": ['x"]]]]]]"', "\\", '\\"'], "b": "[[[[[[[[[["}, True),
        ({"a": [[[[[1]]]]]}, False),
        ({"a": [[[[1]]]]}, True),
        ({"a": "x" * 20}, True),
        ({"a": "x" * 21}, False),
        ({"a": "é" * 15}, False),  # 30 bytes: more than the scan can vouch for, fewer characters than the limit
        ({"a": "\x00"}, False),
    ],
)
def test_the_byte_scan_reads_strings_as_json_writes_them(document: Any, scanned: bool) -> None:
    limits = LimitSettings(text_chars=20, depth=5)
    assert within_limits(orjson.dumps(document), limits) is scanned


def test_the_byte_scan_leaves_to_the_walk_what_it_cannot_read() -> None:
    limits = LimitSettings(text_chars=20, depth=5)
    nul = {"messages": [{"role": "user", "content": "a\x00b"}]}
    assert not within_limits(orjson.dumps(nul), limits)
    assert not within_limits(json.dumps(nul).encode("utf-16-le"), limits)  # json.loads reads UTF-16 too
    assert not within_limits(orjson.dumps({"a": "\\" * 40}), limits)  # 80 backslashes before a quote
    assert within_limits(orjson.dumps({"a": "\\" * 5}), limits)


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
