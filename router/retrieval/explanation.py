"""Why a function was chosen: the parts of its score for one turn.

Built only when a route asks for it, from what fusion already computed, so routes that do
not ask pay nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from router.retrieval.context import TurnRanking
from router.retrieval.fusion import Weights
from router.retrieval.scored import Candidate, ScoredFunction

__all__ = ["Explanation", "explain"]


@dataclass(frozen=True)
class Explanation:
    """The parts of one function's score.

    Attributes:
        dense: cosine similarity of the new turn to the function's text.
        lexical: its BM25 score relative to the best candidate's (0..1).
        lexical_raw: the BM25 score itself.
        example_text: the usage example closest to the turn, when one counted.
        example_similarity: the turn's cosine similarity to that example.
        context_weight: the weight the recent context had for this turn.
        recent: the function's score for the recent-context query, when the context counted.
        weights: how much each signal counted for the new turn.
        score_new: the function's score for the new turn alone.
    """

    dense: float
    lexical: float
    lexical_raw: float
    example_text: str | None
    example_similarity: float | None
    context_weight: float
    recent: float | None
    weights: Weights
    score_new: float


def explain(chosen: Sequence[ScoredFunction], new: Sequence[Candidate], ranking: TurnRanking) -> dict[str, Explanation]:
    """The explanation of each chosen function, by name.

    Args:
        chosen: the functions routed, best first.
        new: the new turn's candidates (every signal's raw score).
        ranking: what fusion made of them (and of the recent context's).
    """
    scored_new, recent, weights = ranking.new, ranking.recent, ranking.weights
    context_weight = ranking.context_weight
    by_name: Mapping[str, Candidate] = {c.name: c for c in new}
    best = max((c.lexical for c in new), default=0.0)
    own = {f.name: f.score for f in scored_new}
    context = {f.name: f.score for f in recent} if context_weight > 0 else {}
    found: dict[str, Explanation] = {}
    for function in chosen:
        name = function.function.name
        candidate = by_name.get(name)
        if candidate is None:
            # Found by the recent context only: the new turn's signals never saw it.
            candidate = Candidate(name, 0.0)
        found[name] = Explanation(
            dense=candidate.cosine,
            lexical=candidate.lexical / best if best > 0 else 0.0,
            lexical_raw=candidate.lexical,
            example_text=candidate.example_text if candidate.example is not None else None,
            example_similarity=candidate.example,
            context_weight=context_weight,
            recent=context.get(name) if context else None,
            weights=weights,
            score_new=own.get(name, 0.0),
        )
    return found
