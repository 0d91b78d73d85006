"""Request limits: messages, functions, string length, nesting and NUL characters, each naming its setting.

What a parsed body may hold is checked by ``check_document``, run on every JSON body before
the route sees it; each error names the field and the setting that bounds it. The body's size
in bytes is counted as it streams in, by the HTTP layer (``router.api.limits``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from router.common.errors import InvalidRequest

MIB = 1024 * 1024
# Bodies of these top-level list fields are counted.
COUNTED = {"messages": ("messages", "per request"), "functions": ("functions", "per catalog")}


class LimitSettings(BaseSettings):
    """How large a request may be."""

    model_config = SettingsConfigDict(env_prefix="ROUTER_LIMIT_", extra="forbid", env_ignore_empty=True)

    body_bytes: int = Field(MIB, ge=1024, description="largest request body, catalog PUTs aside")
    catalog_bytes: int = Field(32 * MIB, ge=1024, description="largest PUT /v1/catalogs/{namespace} body")
    messages: int = Field(1000, ge=1, description="messages in one request")
    functions: int = Field(10_000, ge=1, description="functions in one catalog")
    text_chars: int = Field(100_000, ge=1, description="characters in any one string of a request body")
    depth: int = Field(64, ge=4, le=512, description="how deeply objects and lists of a request body may nest")
    drain_bytes: int = Field(
        64 * MIB,
        ge=0,
        description="most bytes of an oversized body read and discarded so the client can read the 413 answer",
    )


def check_document(document: Any, limits: LimitSettings) -> None:
    """Reject a parsed JSON body that holds too many items, a too long or NUL-bearing string, or nests too deep.

    Raises:
        InvalidRequest: naming the first offending field, in document order.
    """
    if isinstance(document, dict):
        for name in COUNTED:
            if isinstance(items := document.get(name), list):
                check_count(name, len(items), limits)
    try:
        if isinstance(document, str):
            within = len(document) <= limits.text_chars and "\x00" not in document
        else:
            within = not isinstance(document, dict | list) or _within(document, 0, limits.depth, limits.text_chars)
    except RecursionError:  # a depth limit near the interpreter's own: the iterative walk decides
        within = False
    if not within:
        _name_the_field(document, limits)


def _within(node: Any, depth: int, most: int, chars: int) -> bool:
    """Whether nothing in a container breaks a limit: a walk that builds no paths, three times the named one's speed."""
    if depth >= most:
        return False
    for key, value in node.items() if isinstance(node, dict) else enumerate(node):
        if isinstance(key, str) and (len(key) > chars or "\x00" in key):
            return False
        if isinstance(value, str):
            if len(value) > chars or "\x00" in value:
                return False
        elif isinstance(value, dict | list) and not _within(value, depth + 1, most, chars):
            return False
    return True


def _name_the_field(document: Any, limits: LimitSettings) -> None:
    """Raise for the first field over a limit, in document order, named by its path."""
    # Iterative, so a deep document cannot exhaust the interpreter's stack; paths are linked
    # (parent, key) pairs, rendered only for an error.
    if isinstance(document, str):
        _check_string(document, None, limits)
    stack: list[tuple[Any, tuple[Any, str | int] | None, int]] = [(document, None, 0)]
    while stack:
        node, trail, depth = stack.pop()
        if not isinstance(node, dict | list):
            continue
        if depth >= limits.depth:
            where = _path(trail)
            raise InvalidRequest(f"{where}: nested deeper than {limits.depth} levels (ROUTER_LIMIT_DEPTH)", field=where)
        children: list[tuple[Any, tuple[Any, str | int] | None, int]] = []
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(key, str) and ("\x00" in key or len(key) > limits.text_chars):
                _check_string(key, trail, limits, name=True)
            if isinstance(value, str):
                if "\x00" in value or len(value) > limits.text_chars:
                    _check_string(value, (trail, key), limits)
            elif isinstance(value, dict | list):
                children.append((value, (trail, key), depth + 1))
        stack.extend(reversed(children))


def check_count(name: str, count: int, limits: LimitSettings) -> None:
    """Reject ``count`` items of the list ``name`` (``messages`` or ``functions``) when over its limit.

    Raises:
        InvalidRequest: naming the field and the setting.
    """
    noun, scope = COUNTED[name]
    limit = getattr(limits, name)
    if count > limit:
        detail = f"{name}: {count} {noun}; at most {limit} {scope} (ROUTER_LIMIT_{name.upper()})"
        raise InvalidRequest(detail, field=name)


def _check_string(text: str, trail: tuple[Any, str | int] | None, limits: LimitSettings, *, name: bool = False) -> None:
    where = _path(trail)
    what = "a field name" if name else "the text"
    if "\x00" in text:
        raise InvalidRequest(f"{where}: {what} contains a NUL character (\\u0000)", field=where)
    if len(text) > limits.text_chars:
        raise InvalidRequest(
            f"{where}: {what} has {len(text)} characters; at most {limits.text_chars} (ROUTER_LIMIT_TEXT_CHARS)",
            field=where,
        )


def _path(trail: tuple[Any, str | int] | None) -> str:
    keys: list[str | int] = []
    while trail is not None:
        trail, key = trail
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text or "body"
