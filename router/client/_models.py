"""Typed answers of the HTTP API (contract v1), read from JSON.

They mirror ``router/schemas.py`` without importing it, so the client stays light and
keeps working when the sidecar adds fields: unknown fields are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{what}: expected an object, got {type(value).__name__}")
    return cast(Mapping[str, Any], value)


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{what}: expected a list, got {type(value).__name__}")
    return value


def _dicts(value: Any, what: str) -> tuple[dict[str, Any], ...]:
    return tuple(dict(_object(item, f"{what}[{i}]")) for i, item in enumerate(_list(value, what)))


def _str(body: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = body.get(key, default)
    if not isinstance(value, str):
        raise TypeError(f"{key}: expected a string, got {type(value).__name__}")
    return value


def _int(body: Mapping[str, Any], key: str) -> int:
    value = body.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{key}: expected an integer, got {type(value).__name__}")
    return value


def _float(body: Mapping[str, Any], key: str) -> float:
    value = body.get(key)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{key}: expected a number, got {type(value).__name__}")
    return float(value)


def _optional_float(body: Mapping[str, Any], key: str) -> float | None:
    return None if body.get(key) is None else _float(body, key)


@dataclass(frozen=True)
class ExampleMatch:
    """The stored request (usage example) of a function closest to the turn.

    ``runs``: how many of the function's stored requests ask the same thing as the turn (from
    three on, the example counts at full weight).
    """

    text: str
    similarity: float
    runs: int = 0


@dataclass(frozen=True)
class SignalWeights:
    """How much each signal counted for the function."""

    dense: float
    lexical: float
    usage: float


@dataclass(frozen=True)
class Explanation:
    """The parts of a function's score (``route(..., explain=True)``).

    Attributes:
        dense: cosine similarity of the new turn to the function's text.
        lexical: its BM25 score relative to the best candidate's (0..1).
        lexical_raw: the BM25 score itself.
        example: the usage example that matched, if one did.
        context_weight: the weight the recent context had for the turn.
        recent: the function's score for the recent-context query, when it was used.
        weights: how much each signal counted for the function.
        score_new: the function's score for its query alone, before the context.
        part: the part of the turn the function was found for (None: the whole turn).
        terms: the terms summed into the score, by name (they add up to it).
        companion_of: the routed function stored runs call it with, when it came as that one's companion.
        context_only: the turn was ranked by its recent context alone (it only changes the values of
            the request before it).
    """

    dense: float
    lexical: float
    lexical_raw: float
    example: ExampleMatch | None
    context_weight: float
    recent: float | None
    weights: SignalWeights
    score_new: float | None = None
    part: str | None = None
    terms: dict[str, float] = field(default_factory=dict)
    companion_of: str | None = None
    context_only: bool = False

    @classmethod
    def from_json(cls, body: Any) -> Explanation:
        """Read one ``explanation`` object."""
        item = _object(body, "explanation")
        example = item.get("example")
        match = None
        if example is not None:
            found = _object(example, "example")
            runs = _int(found, "runs") if "runs" in found else 0
            match = ExampleMatch(text=_str(found, "text"), similarity=_float(found, "similarity"), runs=runs)
        weights = _object(item.get("weights"), "weights")
        return cls(
            dense=_float(item, "dense"),
            lexical=_float(item, "lexical"),
            lexical_raw=_float(item, "lexical_raw"),
            example=match,
            context_weight=_float(item, "context_weight"),
            recent=_optional_float(item, "recent"),
            weights=SignalWeights(*(_float(weights, k) for k in ("dense", "lexical", "usage"))),
            score_new=_optional_float(item, "score_new"),
            part=item.get("part") if isinstance(item.get("part"), str) else None,
            terms={k: float(v) for k, v in (item.get("terms") or {}).items() if isinstance(v, int | float)},
            companion_of=item["companion_of"] if isinstance(item.get("companion_of"), str) else None,
            context_only=item.get("context_only") is True,
        )


@dataclass(frozen=True)
class RoutedFunction:
    """A function chosen for the turn.

    Attributes:
        name: the function's name.
        description: its description.
        score: relevance to the turn, at most 1 (meaning, words and usage fused, with the recent context).
        parameters: its JSON schema, verbatim.
        pinned: whether it came back because it is pinned (not counted in ``max_functions``).
        explanation: the parts of its score, when the route asked for them (``explain=True``).
    """

    name: str
    description: str
    score: float
    parameters: dict[str, Any]
    pinned: bool = False
    explanation: Explanation | None = None

    @classmethod
    def from_json(cls, body: Any) -> RoutedFunction:
        """Read one ``functions`` item."""
        item = _object(body, "function")
        return cls(
            name=_str(item, "name"),
            description=_str(item, "description", ""),
            score=_float(item, "score"),
            parameters=dict(_object(item.get("parameters", {}), "parameters")),
            pinned=bool(item.get("pinned", False)),
            explanation=None if item.get("explanation") is None else Explanation.from_json(item["explanation"]),
        )


@dataclass(frozen=True)
class Memory:
    """A memory relevant to the turn, with its similarity."""

    text: str
    score: float

    @classmethod
    def from_json(cls, body: Any) -> Memory:
        """Read one ``memories`` item."""
        item = _object(body, "memory")
        return cls(text=_str(item, "text"), score=_float(item, "score"))


@dataclass(frozen=True)
class RouteResult:
    """The answer to a route: the turn's functions, plus the session's context.

    Attributes:
        functions: pinned functions first, then the best-scored ones.
        tools: the same functions as OpenAI tool objects, same order.
        history: the session's last messages, oldest first.
        memories: what the user said before that matters for this turn.
        memory_context: the memories as ready-to-use context text ("" when none).
        context: the text of the new turn that was embedded.
        recent_context: the recent messages plus the new turn, embedded as context.
        degraded: storage was down and the sidecar fails open: only the pinned functions came back.
        below_min_score: how many of the best functions scored below ``min_score`` and were left out.
        left_out: ``{"name", "reason"}`` of functions the API's documented limits kept out of ``tools``.
    """

    functions: tuple[RoutedFunction, ...]
    tools: tuple[dict[str, Any], ...]
    history: tuple[dict[str, Any], ...] = ()
    memories: tuple[Memory, ...] = ()
    memory_context: str = ""
    context: str = ""
    recent_context: str = ""
    degraded: bool = False
    below_min_score: int = 0
    left_out: tuple[dict[str, Any], ...] = ()

    @property
    def names(self) -> list[str]:
        """The chosen functions' names, in order."""
        return [f.name for f in self.functions]

    @classmethod
    def from_json(cls, body: Any) -> RouteResult:
        """Read a ``POST /v1/route`` answer."""
        data = _object(body, "route")
        return cls(
            functions=tuple(RoutedFunction.from_json(f) for f in _list(data.get("functions"), "functions")),
            tools=_dicts(data.get("tools", []), "tools"),
            history=_dicts(data.get("history", []), "history"),
            memories=tuple(Memory.from_json(m) for m in _list(data.get("memories", []), "memories")),
            memory_context=_str(data, "memory_context", ""),
            context=_str(data, "context", ""),
            recent_context=_str(data, "recent_context", ""),
            degraded=data.get("degraded") is True,
            below_min_score=below if isinstance(below := data.get("below_min_score"), int) else 0,
            left_out=_dicts(data.get("left_out", []), "left_out"),
        )


@dataclass(frozen=True)
class Health:
    """Liveness or readiness, with each readiness check."""

    status: str
    checks: dict[str, bool]

    @property
    def ready(self) -> bool:
        """Whether the sidecar is ready to route (a ``/readyz`` answer said so)."""
        return self.status == "ready"

    @classmethod
    def from_json(cls, body: Any) -> Health:
        """Read a ``/healthz`` or ``/readyz`` answer."""
        data = _object(body, "health")
        checks = _object(data.get("checks", {}), "checks")
        return cls(status=_str(data, "status"), checks={str(k): bool(v) for k, v in checks.items()})
