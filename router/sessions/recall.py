"""Which memories come back with a turn: the ones that matter for what the turn is about to do.

A preference rarely shares words with the request it matters for ("I am vegetarian" and
"a restaurant near the Louvre" have cosine -0.05), but it does with the routed function's
parameters ("dietary restrictions: vegetarian, vegan, allergies"). So a memory's relevance
reads three things, all from vectors already at hand:

- the turn: cosine of the memory to the new turn, or to the turn with its recent context;
- the routed functions: the best cosine of the memory to one of a function's *facets* (its
  own vector, and each parameter with its description and allowed values), weighted by how
  well the function was routed relative to the first one;
- the user's other memories: a memory is ranked by how far it stands out among them, on the
  turn or on the routed functions, whichever singles it out more (each standardized over the
  user's memories); it comes back when it stands out at least ``standout`` as much as the best
  one, and its relevance (the turn and the functions averaged) is above a low floor
  (``min_score``) that only keeps out what matters to nothing.

A user who has said only a few things expects the assistant to know them all: when every
memory fits a small budget (``budget`` memories, ``budget_chars`` characters, about 150 tokens
by default), each one above the floor comes back, best first, and no margin cuts it.

Facet vectors are embedded with their function when a catalog is synced
(``router.retrieval.texts.parameter_facets``), so ranking is a few small matrix products in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from router.sessions.records import Memory, MemoryRows


@dataclass(frozen=True)
class RecallSettings:
    """How memories are ranked and cut.

    Attributes:
        limit: at most this many memories come back.
        standout: a memory comes back when it stands out among the user's memories at least this
            share as much as the best one does (0: each one above the user's average).
        min_score: and when its relevance is at least this (relevance is in -1..1).
        function_weight: how much the routed functions count against the turn itself.
        context_weight: how much the turn with its recent context counts against the new turn alone.
        budget: a scope with at most this many memories ...
        budget_chars: ... holding at most this many characters gets each one above the floor.
    """

    limit: int = 3
    standout: float = 0.65
    min_score: float = 0.12
    function_weight: float = 0.5
    context_weight: float = 0.8
    budget: int = 5
    budget_chars: int = 600


def rank(
    rows: MemoryRows,
    turn: np.ndarray,
    *,
    recent: np.ndarray | None = None,
    functions: Sequence[tuple[float, np.ndarray]] = (),
    settings: RecallSettings | None = None,
) -> list[Memory]:
    """The memories that matter for the turn, most relevant first.

    Args:
        rows: the scope's memories with their vectors.
        turn: the new turn's vector.
        recent: the vector of the turn with its recent context, when it has one.
        functions: each routed function's score and its facet vectors (one row per facet).
        settings: ranking and cut-off.
    """
    settings = settings or RecallSettings()
    count = len(rows.texts)
    if not count or settings.limit <= 0:
        return []
    # One product for every query vector: small matrices cost their call more than their size.
    queries = [np.asarray(turn, dtype=np.float32)[None, :]]
    if recent is not None:
        queries.append(np.asarray(recent, dtype=np.float32)[None, :])
    queries += [np.asarray(facets, dtype=np.float32) for _, facets in functions]
    scores = rows.vectors @ np.concatenate(queries).T
    relevance: np.ndarray = scores[:, 0]
    if recent is not None:
        relevance = np.maximum(relevance, settings.context_weight * scores[:, 1])
    stands = _standardized(relevance)
    if functions:
        best = max(score for score, _ in functions)
        through = np.full(count, -1.0, dtype=np.float32)
        column = len(queries) - len(functions)
        for score, facets in functions:
            weight = float(np.clip(score / best, 0.0, 1.0)) if best > 0 else 1.0
            through = np.maximum(through, weight * scores[:, column : column + len(facets)].max(axis=1))
            column += len(facets)
        relevance = (relevance + settings.function_weight * through) / (1.0 + settings.function_weight)
        stands = np.maximum(stands, _standardized(through))
    fits = count <= settings.budget and sum(map(len, rows.texts)) <= settings.budget_chars
    order = np.argsort(-stands, kind="stable")[: count if fits else settings.limit]
    least = -np.inf if fits else settings.standout * float(stands[order[0]])
    return [
        Memory(rows.texts[i], float(relevance[i]))
        for i in order
        if relevance[i] >= settings.min_score and stands[i] >= least
    ]


def _standardized(values: np.ndarray) -> np.ndarray:
    # How far each memory is above the user's others, in their spread: the turn and the routed
    # functions give cosines of different spreads, so this lets either single a memory out.
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 1e-6 else np.zeros_like(values)


def memory_context(memories: Sequence[Memory]) -> str:
    """Ready-to-use context text for the model (empty when there is nothing to say)."""
    if not memories:
        return ""
    lines = "\n".join(f"- {m.text}" for m in memories)
    return f"Relevant things the user said before, most relevant first:\n{lines}"
