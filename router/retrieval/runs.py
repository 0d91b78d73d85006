"""The calls of a run, each with its request and its outcome, as the stored messages show them.

Every shape the router stores is read: OpenAI ``tool_calls`` and ``tool`` messages (and the
older ``function_call`` with ``function`` messages), Responses API ``function_call`` and
``function_call_output`` items, Anthropic ``tool_use`` and ``tool_result`` blocks.

A result *failed* when the message says so (Anthropic's and MCP's ``is_error``/``isError``,
LangGraph's ``status: "error"``, the ``is_error`` the Agent Framework integration writes for
a function that raised) or when its text is an error report: it starts with ``Error:`` (as
Agent Framework writes ``Error: Argument parsing failed.``), an exception's name and a colon
(``ValueError: ...``), ``An error occurred`` or a traceback, or it is a JSON object with a
non-empty ``error`` (or a true ``isError``). A normal answer that only mentions an error
("no errors found", "the error rate fell") is a success.

A call *uses* an earlier call's result when one of its argument values came back in that result
and is not in the request: ``book_hotel(hotel_id="H-2231")`` after a ``search_hotels`` that
returned ``H-2231`` is the next step of a task, not a correction of the search. Only values
that tell one thing from another count: an id, a number, a date, a name of several words, an
address; a lone word ("USD", "time", "economy") turns up in any result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any, Literal

from router.common.messages import message_text, results_only

Outcome = Literal["succeeded", "failed", "pending"]
# Shorter values ("2", "no") turn up in unrelated results by chance.
_SHORTEST_VALUE = 3
# A value telling one thing from another holds a digit, a space or punctuation ("H-2231", "Hostal Sol").
_DISTINCT = re.compile(r"[\d\W_]")
_WORD = re.compile(r"\w+")
_ERROR_TEXT = re.compile(
    r"^\s*(?:error(?:\s+\d+)?\s*:|[A-Za-z_.]*(?:Error|Exception)\s*:|an error occurred\b|"
    r"traceback \(most recent call last\))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RunCall:
    """One call of a run.

    Attributes:
        position: where the calling message is in the messages read.
        name: the function called.
        request: the request of the call's turn (its user text, lines joined).
        turn: where that request begins (calls of one turn share it).
        outcome: what its result said; ``pending`` while no result is seen.
        answered: where its result is (-1 while pending).
        arguments: its arguments as the message holds them (a JSON string or an object).
        result: its result's content as the message holds it (None while pending).
    """

    position: int
    name: str
    request: str
    turn: int
    outcome: Outcome = "pending"
    answered: int = -1
    arguments: Any = field(default=None, compare=False)
    result: Any = field(default=None, compare=False)

    # Read only for a call that a later one may continue, not for every call of every post.
    @cached_property
    def values(self) -> frozenset[str]:
        """Its argument values that tell one thing from another (strings and numbers, lower case)."""
        return _values(self.arguments)

    @cached_property
    def returned(self) -> str:
        """The text of its result, lower case ("" while pending)."""
        return "" if self.result is None else _text(self.result)

    def uses(self, earlier: RunCall) -> bool:
        """Whether an argument of this call came back in ``earlier``'s result and is not in the request."""
        asked = self.request.casefold()
        return any(_holds(earlier.returned, value) and not _holds(asked, value) for value in self.values)


@dataclass
class _Open:
    position: int
    name: str
    key: str | None
    request: str
    turn: int
    arguments: Any
    outcome: Outcome = "pending"
    answered: int = -1
    result: Any = None


def run_calls(messages: Sequence[Mapping[str, Any]], *, roles: Sequence[str]) -> list[RunCall]:
    """Every call made in ``messages`` after a request, in order, with its outcome.

    A result naming a call id answers the latest unanswered call of that id before it; one
    naming none answers the earliest unanswered call before it.
    """
    request: list[str] = []
    turn = -1
    in_request = False
    opened: list[_Open] = []
    for position, message in enumerate(messages):
        for key, failed, content in results(message):
            _answer(opened, key, failed, position, content)
        text = message_text(message) if message.get("role") in roles else ""
        if message.get("role") in roles and (text or not results_only(message)):
            if not in_request:
                request, turn = [], position
            if text:
                request.append(text)
            in_request = True
            continue
        in_request = False
        if request:
            opened += [
                _Open(position, name, key, "\n".join(request), turn, arguments)
                for name, key, arguments in calls(message)
            ]
    return [
        RunCall(c.position, c.name, c.request, c.turn, c.outcome, c.answered, c.arguments, c.result) for c in opened
    ]


def _answer(calls: list[_Open], key: str | None, failed: bool, position: int, result: Any) -> None:
    waiting = [c for c in calls if c.outcome == "pending"]
    if key is not None:
        matched = [c for c in waiting if c.key == key]
        chosen = matched[-1] if matched else None
    else:
        chosen = waiting[0] if waiting else None
    if chosen is not None:
        chosen.outcome = "failed" if failed else "succeeded"
        chosen.answered = position
        chosen.result = result


def calls(message: Mapping[str, Any]) -> list[tuple[str, str | None, Any]]:
    """The (function, call id, arguments) a message calls, in order.

    Reads OpenAI ``tool_calls`` (and the older ``function_call``), Responses API
    ``function_call`` items, and ``tool_use`` content parts as Anthropic's API writes them.
    Arguments are as the message holds them: a JSON string, or Anthropic's ``input`` object.
    """
    found: list[tuple[str, str | None, Any]] = []
    if message.get("type") == "function_call" and isinstance(message.get("name"), str):
        found.append((message["name"], _key(message.get("call_id")), message.get("arguments")))
    listed = message.get("tool_calls")
    for call in listed if isinstance(listed, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            found.append((function["name"], _key(call.get("id")), function.get("arguments")))
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping) and isinstance(legacy.get("name"), str):
        found.append((legacy["name"], None, legacy.get("arguments")))
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and part.get("type") == "tool_use" and isinstance(part.get("name"), str):
                found.append((part["name"], _key(part.get("id")), part.get("input")))
    return found


def results(message: Mapping[str, Any]) -> list[tuple[str | None, bool, Any]]:
    """The results a message carries: (the call id it answers, whether it failed, its content)."""
    if message.get("role") in ("tool", "function"):
        content = message.get("content")
        return [(_key(message.get("tool_call_id")), failed(message, content), content)]
    if message.get("type") == "function_call_output":
        output = message.get("output")
        return [(_key(message.get("call_id")), failed(message, output), output)]
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [
        (_key(part.get("tool_use_id")), failed(part, part.get("content")), part.get("content"))
        for part in content
        if isinstance(part, Mapping) and part.get("type") == "tool_result"
    ]


def failed(holder: Mapping[str, Any], content: Any) -> bool:
    """Whether a result failed: flagged so by its message or block, or reporting an error in its content."""
    if holder.get("is_error") is True or holder.get("isError") is True or holder.get("status") == "error":
        return True
    return _error_content(content)


def _error_content(content: Any) -> bool:
    if isinstance(content, Mapping):
        if content.get("isError") is True or content.get("is_error") is True:
            return True
        return bool(content.get("error"))
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return bool(texts) and _error_content(texts[0])
    if not isinstance(content, str):
        return False
    stripped = content.strip()
    if stripped.startswith("{"):
        try:
            decoded = json.loads(stripped)
        except (ValueError, RecursionError):  # deep nesting is an answer too, not an error report
            decoded = None
        if isinstance(decoded, Mapping):
            return _error_content(decoded)
    return _ERROR_TEXT.match(stripped) is not None


def _key(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _values(arguments: Any) -> frozenset[str]:
    """The string and number leaves of a call's arguments, lower case, long enough to tell."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return frozenset()
    found: set[str] = set()
    stack = [arguments]
    while stack:
        value = stack.pop()
        if isinstance(value, Mapping):
            stack += value.values()
        elif isinstance(value, list):
            stack += value
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            text = str(value).strip().casefold()
            if len(text) >= _SHORTEST_VALUE and _DISTINCT.search(text):
                found.add(text)
    return frozenset(found)


def _text(content: Any) -> str:
    """A result's content as lower-case text: a string, text parts joined, or JSON with its escapes read."""
    if isinstance(content, str):
        text: str = content
        if not text.lstrip().startswith(("{", "[", '"')):
            return text.casefold()
        try:
            content = json.loads(text)
        except (ValueError, RecursionError):
            return text.casefold()
    elif isinstance(content, list) and all(isinstance(p, Mapping) for p in content):
        return " ".join(_text(p["text"]) for p in content if isinstance(p.get("text"), str))
    try:
        return json.dumps(content, ensure_ascii=False).casefold()
    except (TypeError, ValueError, RecursionError):
        return ""


def _holds(text: str, value: str) -> bool:
    """Whether ``value`` stands in ``text`` as a whole: its words are words of ``text``, and it is there as written.

    Words, not positions: a search that checks the ends of each occurrence costs in proportion to
    the occurrences, which a hostile result can multiply.
    """
    words = _WORD.findall(value)
    if not words or not _words(text).issuperset(words):
        return False
    return words == [value] or value in text


@lru_cache(maxsize=64)
def _words(text: str) -> frozenset[str]:
    """The words of a text, read once for all the values checked against it."""
    return frozenset(_WORD.findall(text))
