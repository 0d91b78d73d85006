"""What a route request asks (``Turn``) and the answer it gets (``Routed``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from router.catalog.functions import FunctionDef
from router.retrieval.explained import Explanation
from router.retrieval.scored import ScoredFunction
from router.sessions.records import Memory


@dataclass(frozen=True)
class Turn:
    """What a route request asks, with defaults resolved."""

    namespace: str
    messages: Sequence[Mapping[str, Any]]
    session_id: str | None = None
    user_id: str | None = None
    max_functions: int = 3
    recent_messages: int = 2
    min_score: float | None = None
    pinned: Sequence[str] = ()
    history_messages: int = 20
    explain: bool = False
    # Whether a turn with a session keeps a route record (a tool search keeps its own, of what it returned).
    recorded: bool = True


@dataclass(frozen=True)
class Routed:
    """The answer for a turn; ``below_min_score`` counts the best functions ``min_score`` left out."""

    functions: list[ScoredFunction]
    pinned: list[ScoredFunction]
    context: str
    recent_context: str
    history: list[dict[str, Any]] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    degraded: bool = False
    explanations: dict[str, Explanation] = field(default_factory=dict)
    below_min_score: int = 0


def pinned_first(routed: Routed) -> list[tuple[FunctionDef, float, bool]]:
    """Pinned functions then routed ones, each with its score and whether it was pinned."""
    return [(f.function, f.score, True) for f in routed.pinned] + [
        (f.function, f.score, False) for f in routed.functions
    ]
