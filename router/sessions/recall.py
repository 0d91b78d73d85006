"""Which memories come back with a turn: the ones that matter for what the turn is about to do.

A preference rarely shares words with the request it matters for ("I am vegetarian" and
"a restaurant near the Louvre" have cosine -0.05), but it does with the routed function's
parameters ("dietary restrictions: vegetarian, vegan, allergies"). So a memory's relevance
reads three things, all from vectors already at hand:

- the turn: cosine of the memory to the new turn, or to the turn with its recent context;
- the routed functions: the best cosine of the memory to one of a function's *facets* (its
  own vector, and each parameter with its description and allowed values), weighted by how
  well the function was routed relative to the first one;
- the user's other memories: relevance is ranked among them and cut relative to the best
  (``margin``), above a low floor (``min_score``) that only keeps out what matters to nothing.

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

from router.sessions.memory import Memory, MemoryRows


@dataclass(frozen=True)
class RecallSettings:
    """How memories are ranked and cut.

    Attributes:
        limit: at most this many memories come back.
        margin: a memory comes back when its relevance is within this of the best one's.
        min_score: and when it is at least this (relevance is in -1..1).
        function_weight: how much the routed functions count against the turn itself.
        context_weight: how much the turn with its recent context counts against the new turn alone.
        budget: a scope with at most this many memories ...
        budget_chars: ... holding at most this many characters gets each one above the floor.
    """

    limit: int = 3
    margin: float = 0.05
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
    if functions:
        best = max(score for score, _ in functions)
        through = np.full(count, -1.0, dtype=np.float32)
        column = len(queries) - len(functions)
        for score, facets in functions:
            weight = float(np.clip(score / best, 0.0, 1.0)) if best > 0 else 1.0
            through = np.maximum(through, weight * scores[:, column : column + len(facets)].max(axis=1))
            column += len(facets)
        relevance = (relevance + settings.function_weight * through) / (1.0 + settings.function_weight)
    fits = count <= settings.budget and sum(map(len, rows.texts)) <= settings.budget_chars
    order = np.argsort(-relevance, kind="stable")[: count if fits else settings.limit]
    top = float(relevance[order[0]])
    least = settings.min_score if fits else max(settings.min_score, top - settings.margin)
    return [Memory(rows.texts[i], float(relevance[i])) for i in order if relevance[i] >= least]
