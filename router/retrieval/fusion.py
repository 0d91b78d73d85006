"""Fusion: one query's candidates ranked by one fixed rule.

Each candidate function scores::

    score = (1 - a) * max(cosine, b * example) + a * bm25 / best_bm25

- ``cosine``: the query's similarity to the function's text (its meaning);
- ``example``: the query's similarity to the function's closest usage example (a stored
  request that led to a call of it), counted at ``b`` (``example_weight``) so that a request
  said in other words counts a little below the function's own text; it counts only where it
  beats the cosine, so an example never lowers a function. ``b`` is 1 when ``AGREED`` of the
  function's stored requests ask the same thing as the query;
- ``bm25 / best_bm25``: the function's BM25 score relative to the best candidate's (its words);
- ``a`` (``lexical_weight``): the words' share.

The score stays similarity-like: at most 1, and the cosine itself when no word or example adds
anything. ``docs/scoring.md`` gives each constant's reason and its measured effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from router.retrieval.scored import Candidate, Ranked

# One stored request is an anecdote, perhaps a mistake whose call succeeded; three that asked the
# same thing and called the same function are evidence: their example counts as the function's own
# text. Learned R@1: APIBench 0.239 -> 0.265, multi_turn_base 0.737 -> 0.751, BFCL and Seal-Tools
# level; two lost BFCL's Complete@10 (0.814 -> 0.804), where twin functions split its runs.
AGREED = 3


@dataclass(frozen=True)
class Weights:
    """How much each signal counted for a function.

    Attributes:
        dense: the share of the semantic score (cosine, or usage where it is higher): ``1 - a``.
        lexical: the share of the relative BM25 score: ``a``.
        usage: the weight of its closest usage example's similarity inside the semantic score:
            ``b``, or 1 for a function ``AGREED`` stored requests speak for (0 without an example).
    """

    dense: float
    lexical: float
    usage: float


@dataclass(frozen=True)
class Terms:
    """A function's score for one query, as the terms that were summed.

    ``dense + usage + lexical == score``; one of ``dense`` and ``usage`` is 0 (the semantic
    score is the larger of the cosine and the weighted example similarity).
    """

    name: str
    dense: float
    usage: float
    lexical: float

    @property
    def score(self) -> float:
        """The function's score for the query."""
        return self.dense + self.usage + self.lexical


def scored(candidates: Sequence[Candidate], *, lexical_weight: float, example_weight: float) -> list[Terms]:
    """Each candidate's terms for one query, best score first (ties by name).

    Args:
        candidates: what ``router.retrieval.candidates.candidates`` found for the query.
        lexical_weight: ``a``, the share of the relative BM25 score, in [0, 1].
        example_weight: ``b``, how much an example's similarity counts against the function's own
            (1 for a function ``AGREED`` stored requests speak for).
    """
    best = max((c.lexical for c in candidates), default=0.0)
    found: list[Terms] = []
    for c in candidates:
        example = example_share(c, example_weight) * c.example if c.example is not None else None
        words = lexical_weight * (c.lexical / best if best > 0 else 0.0)
        if example is not None and example > c.cosine:
            found.append(Terms(c.name, 0.0, (1 - lexical_weight) * example, words))
        else:
            found.append(Terms(c.name, (1 - lexical_weight) * c.cosine, 0.0, words))
    found.sort(key=lambda t: (-t.score, t.name))
    return found


def hybrid(candidates: Sequence[Candidate], *, lexical_weight: float, example_weight: float) -> list[Ranked]:
    """Rank one query's candidates, best first (``scored`` without the terms)."""
    terms = scored(candidates, lexical_weight=lexical_weight, example_weight=example_weight)
    return [Ranked(t.name, t.score) for t in terms]


def example_share(candidate: Candidate, example_weight: float) -> float:
    """How much the candidate's closest example counts: ``b``, or fully once ``AGREED`` runs asked the same."""
    return 1.0 if candidate.example_runs >= AGREED else example_weight
