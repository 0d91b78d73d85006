"""Why each routed function was chosen: the terms its score summed, and what they came from.

Built from a turn's queries and ranking (``router.retrieval.context``) only when a route asks
for ``explain``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from router.retrieval.context import TurnQueries, TurnRanking
from router.retrieval.fusion import Weights, example_share
from router.retrieval.scored import Candidate, ScoredFunction


@dataclass(frozen=True)
class ExampleMatch:
    """The usage example closest to the query, the query's cosine to it, and ``Nearest.runs``."""

    text: str
    similarity: float
    runs: int = 0


@dataclass(frozen=True)
class Explanation:
    """The parts of one function's score.

    Attributes:
        dense: cosine similarity of the query it was found for to the function's text.
        lexical: its BM25 score relative to the best candidate's of that query (0..1).
        lexical_raw: the BM25 score itself.
        example: the usage example closest to that query, when one counted.
        context_weight: the weight the recent context had for this turn.
        recent: the function's score for the recent-context query, when the context counted.
        weights: how much each signal counted for it, for the query it was found for.
        score_new: the function's score for its query alone, before the context.
        part: the part of the turn the function was found for (None: the whole turn).
        terms: the terms summed into the score (``dense``, ``usage``, ``lexical``, ``context``,
            ``unseen``): they add up to it.
        companion_of: the routed function it follows as a companion, when that moved it up (its
            score is its own, or that function's times how often runs call them together when
            more: then that is its one term, ``companion``).
        context_only: the turn was ranked by its recent context alone (it only changes the values
            of the request before it): ``dense``, ``lexical`` and the terms are the context's.
    """

    dense: float
    lexical: float
    lexical_raw: float
    example: ExampleMatch | None
    context_weight: float
    recent: float | None
    weights: Weights
    score_new: float
    part: str | None = None
    terms: dict[str, float] = field(default_factory=dict)
    companion_of: str | None = None
    context_only: bool = False


def explain(
    chosen: Sequence[ScoredFunction],
    queries: TurnQueries,
    ranking: TurnRanking,
    companions: Mapping[str, str] | None = None,
) -> dict[str, Explanation]:
    """The explanation of each chosen function, by name.

    ``companions``: for each function that came as a companion, the routed function it accompanies.
    """
    parts = dict(queries.parts)
    explained: dict[str, Explanation] = {}
    for function in chosen:
        name = function.function.name
        anchor = (companions or {}).get(name)
        found = ranking.found.get(name)
        if anchor is not None and (found is None or found.score < function.score):
            explained[name] = _companion(function, anchor, ranking)
            continue
        if found is None:  # only a companion can come from no query's candidates
            continue
        whole = queries.recent if ranking.as_context and queries.recent is not None else queries.whole
        pool = parts[found.part] if found.part is not None else whole
        best = max((c.lexical for c in pool), default=0.0)
        # One found by the recent context only: the turn's own search never saw it.
        candidate = next((c for c in pool if c.name == name), None) or Candidate(name, 0.0)
        example = None
        if candidate.example is not None and candidate.example_text is not None:
            example = ExampleMatch(candidate.example_text, candidate.example, candidate.example_runs)
        terms = found.terms
        share = ranking.weights.lexical if found.part is None else ranking.part_lexical
        usage = example_share(candidate, ranking.weights.usage) if candidate.example is not None else 0.0
        weights = Weights(dense=1.0 - share, lexical=share, usage=usage)
        explained[name] = Explanation(
            dense=candidate.cosine,
            lexical=candidate.lexical / best if best > 0 else 0.0,
            lexical_raw=candidate.lexical,
            example=example,
            context_weight=ranking.context_weight,
            recent=found.recent,
            weights=weights,
            score_new=found.alone if found.alone is not None else terms.score,
            part=found.part,
            companion_of=anchor,
            context_only=ranking.as_context,
            terms={
                "dense": terms.dense,
                "usage": terms.usage,
                "lexical": terms.lexical,
                "context": found.context,
                "unseen": found.unseen,
            },
        )
    return explained


def _companion(function: ScoredFunction, anchor: str, ranking: TurnRanking) -> Explanation:
    """A companion's explanation: its score is its anchor's times how often runs call them together."""
    zero = dict.fromkeys(("dense", "usage", "lexical", "context", "unseen"), 0.0)
    return Explanation(
        dense=0.0,
        lexical=0.0,
        lexical_raw=0.0,
        example=None,
        context_weight=ranking.context_weight,
        recent=None,
        weights=Weights(dense=0.0, lexical=0.0, usage=0.0),  # its one term is the companion score
        score_new=function.score,
        companion_of=anchor,
        context_only=ranking.as_context,
        terms={**zero, "companion": function.score},
    )
