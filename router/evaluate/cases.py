"""Evaluation cases: a request and the functions it needs, read from JSONL or built from stored runs.

A line of a cases file is one JSON object::

    {"request": "refund order 1042", "expected": ["issue_refund"]}
    {"messages": [{"role": "user", "content": "..."}], "expected": ["a", "b"], "namespace": "commerce"}

``request`` (a string) or ``messages`` (OpenAI-style) is the turn; ``expected`` names the
functions it needs, at least one; ``namespace`` is needed only when the expected functions are
in more than one catalog of those evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from router.common.messages import context_texts

_KEYS = {"request", "messages", "expected", "namespace"}
# Errors listed before the rest are only counted: a wrong file is usually wrong everywhere.
_SHOWN = 20


class CasesInvalid(ValueError):
    """A cases file (or its cases against the catalogs) is wrong; the message names every line at fault."""


@dataclass(frozen=True)
class Case:
    """One turn and the functions it needs.

    Attributes:
        where: where the case comes from (``cases.jsonl:3``, or a stored session's run).
        messages: the turn's messages as routed.
        request: the turn's text, as routing and the peers read it.
        expected: the functions the turn needs, without repeats.
        namespace: the catalog it is routed in (resolved by ``assign`` when not given).
    """

    where: str
    messages: tuple[Mapping[str, Any], ...]
    request: str
    expected: tuple[str, ...]
    namespace: str | None = None


def _fail(where: str, problem: str) -> str:
    return f"{where}: {problem}"


def parse_case(raw: Any, *, where: str, roles: Sequence[str] = ("user",)) -> Case:
    """Validate one decoded line; raises ``CasesInvalid`` naming the field at fault."""
    if not isinstance(raw, dict):
        raise CasesInvalid(_fail(where, f"must be a JSON object, got {type(raw).__name__}"))
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise CasesInvalid(
            _fail(where, f"unexpected keys {unknown}; expected request or messages, expected, namespace")
        )
    if ("request" in raw) == ("messages" in raw):
        raise CasesInvalid(_fail(where, "give exactly one of request (a string) or messages (a list)"))
    if "request" in raw:
        if not isinstance(raw["request"], str) or not raw["request"].strip():
            raise CasesInvalid(_fail(where, "request: must be a non-empty string"))
        messages: tuple[Mapping[str, Any], ...] = ({"role": "user", "content": raw["request"]},)
    else:
        listed = raw["messages"]
        if not isinstance(listed, list) or not all(isinstance(m, dict) for m in listed):
            raise CasesInvalid(_fail(where, "messages: must be a list of message objects"))
        messages = tuple(listed)
    request = "\n".join(context_texts(messages, roles=roles))
    if not request:
        raise CasesInvalid(_fail(where, f"messages: no message with role {' or '.join(roles)} has any text"))
    expected = raw.get("expected")
    if not isinstance(expected, list) or not expected or not all(isinstance(name, str) and name for name in expected):
        raise CasesInvalid(_fail(where, "expected: must be a non-empty list of function names"))
    namespace = raw.get("namespace")
    if namespace is not None and (not isinstance(namespace, str) or not namespace):
        raise CasesInvalid(_fail(where, "namespace: must be a catalog's namespace (a string)"))
    return Case(where, messages, request, tuple(dict.fromkeys(expected)), namespace)


def _raise(errors: Sequence[str]) -> None:
    if errors:
        more = f"\n(and {len(errors) - _SHOWN} more)" if len(errors) > _SHOWN else ""
        raise CasesInvalid("\n".join(errors[:_SHOWN]) + more)


def read_cases(path: Path, *, roles: Sequence[str] = ("user",)) -> tuple[list[Case], list[str]]:
    """The cases of a JSONL file (blank lines skipped) and a problem for each bad line.

    Raises:
        CasesInvalid: when the file cannot be read, is one JSON array, or holds nothing, or when
            no line is a case (naming every bad one).
    """
    cases: list[Case] = []
    errors: list[str] = []
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte order mark, as some editors write, is no text
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise CasesInvalid(f"{path}: cannot be read: {reason}") from exc
    if text.lstrip().startswith("[") and _is_array(text):
        raise CasesInvalid(f"{path}: holds one JSON array; write one JSON object per line (JSON Lines)")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            cases.append(parse_case(json.loads(line), where=where, roles=roles))
        except json.JSONDecodeError as exc:
            errors.append(_fail(where, f"not valid JSON: {exc.msg} (column {exc.colno})"))
        except CasesInvalid as exc:
            errors.append(str(exc))
    if not cases:
        _raise(errors)
        raise CasesInvalid(f"{path}: holds no case; write one JSON object per line")
    return cases, errors


def _is_array(text: str) -> bool:
    try:
        return isinstance(json.loads(text), list)
    except json.JSONDecodeError:
        return False


def load_cases(path: Path, *, roles: Sequence[str] = ("user",)) -> list[Case]:
    """The cases of a JSONL file.

    Raises:
        CasesInvalid: naming every bad line (number and field), or when the file cannot be read
            or holds no case.
    """
    cases, errors = read_cases(path, roles=roles)
    _raise(errors)
    return cases


def assign(
    cases: Sequence[Case],
    catalogs: Mapping[str, set[str]],
    *,
    namespace: str | None = None,
    errors: Sequence[str] = (),
) -> tuple[list[Case], list[Case]]:
    """Each case with the namespace it is routed in, checked against the catalogs' function names.

    A case's own namespace comes first, then ``namespace``, then the one catalog that holds all
    its expected functions. With ``namespace`` (one catalog evaluated out of a shared cases
    file), a case of another namespace, or one expecting no function of it, is left out.

    Returns:
        The cases placed, and those left out.

    Raises:
        CasesInvalid: naming each case whose namespace is unknown or ambiguous, or that expects a
            function its catalog lacks, after ``errors`` (the file's bad lines).
    """
    placed: list[Case] = []
    left: list[Case] = []
    errors = list(errors)
    for case in cases:
        if namespace is not None and (
            case.namespace not in (None, namespace) or not set(case.expected) & catalogs.get(namespace, set())
        ):
            left.append(case)
            continue
        chosen = case.namespace or namespace
        wanted = set(case.expected)
        if chosen is None:
            holders = sorted(ns for ns, names in catalogs.items() if wanted <= names)
            if len(holders) == 1:
                chosen = holders[0]
            elif holders:
                errors.append(_fail(case.where, f"namespace: the expected functions are in {holders}; name one"))
                continue
            elif len(catalogs) == 1:
                chosen = next(iter(catalogs))
            else:
                lacking = sorted(n for n in wanted if not any(n in names for names in catalogs.values()))
                problem = f"no catalog has {lacking}" if lacking else "no one catalog has them all"
                errors.append(_fail(case.where, f"expected: {problem}"))
                continue
        if chosen not in catalogs:
            errors.append(_fail(case.where, f"namespace: no catalog named {chosen!r} (have {sorted(catalogs)})"))
            continue
        lacking = [n for n in case.expected if n not in catalogs[chosen]]
        if lacking:
            errors.append(_fail(case.where, f"expected: catalog {chosen!r} has no function named {lacking}"))
            continue
        placed.append(replace(case, namespace=chosen))
    _raise(errors)
    if left and not placed:
        raise CasesInvalid(f"no case expects a function of catalog {namespace!r}")
    return placed, left
