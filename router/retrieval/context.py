"""A turn's ranking: the new turn's own, nudged by its recent context where the turn is vague.

How much the context counts is decided per turn (``context_weight``); the new turn's signals are
fused by ``router.retrieval.fusion.adaptive``. Why a function was chosen (``explain``) is built
only when a route asks for it, from what fusion already computed, so other routes pay nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from router.retrieval.fusion import Weights, adaptive
from router.retrieval.scored import Candidate, Ranked, ScoredFunction


@dataclass(frozen=True)
class TurnRanking:
    """A turn's ranking, with what produced it.

    Attributes:
        functions: the final ranking, best first.
        new: the new turn's own ranking.
        recent: the recent-context query's ranking (empty when there was none).
        weights: the signal weights of the new turn.
        context_weight: the weight the recent context had.
    """

    functions: list[Ranked]
    new: list[Ranked]
    recent: list[Ranked]
    weights: Weights
    context_weight: float


def context_weight(
    new: Sequence[Candidate],
    *,
    weight: float,
    clear: float,
    vague: float,
    recent: Sequence[Candidate] | None = None,
) -> float:
    """How much the recent context counts for a turn, given what the new turn alone found.

    A turn that names what it wants ("email Dana the report") needs no history, and letting
    history in only blurs it; a follow-up ("undo that", "same for Paris") matches nothing well
    and needs it. So the context gets all of ``weight`` when the new turn's best similarity
    (to a function or to a usage example) is at most ``vague``, none from ``clear`` up, and a
    share in between.

    And the context must know more than the turn: with ``recent`` (the recent-context query's
    candidates), that share is scaled by how much better the context's best match is than the
    new turn's, relative to the new turn's (``(best_recent - best_new) / best_new``, full from
    twice as good). Earlier turns that match no better than the new one only blur it.
    """
    best = _best(new)
    if best <= vague:
        share = weight
    elif best >= clear:
        return 0.0
    else:
        share = weight * (clear - best) / (clear - vague)
    if recent is None or best <= 0:
        return share
    return share * min(1.0, max(0.0, (_best(recent) - best) / best))


def _best(found: Sequence[Candidate]) -> float:
    """The best similarity of a query's candidates, to a function or to a usage example."""
    return max((max(c.cosine, c.example or -1.0) for c in found), default=-1.0)


def fuse(new: Sequence[Ranked], recent: Sequence[Ranked], *, weight: float) -> list[Ranked]:
    """Rank by the new turn's similarity, nudged by the recent context's.

    Each function scores ``(s_new + weight * s_recent) / (1 + weight)``: a weighted mean of
    cosine similarities, so scores keep their scale. The new turn leads; the recent
    context breaks near-ties and lifts functions a follow-up only implies. A function
    missing from one candidate list gets that list's lowest score (an upper bound of its own).
    """
    if not recent or weight == 0:
        return list(new)
    floor_new = new[-1].score if new else 0.0
    floor_recent = recent[-1].score
    s_new = {found.name: found.score for found in new}
    s_recent = {found.name: found.score for found in recent}
    fused = [
        Ranked(name, (s_new.get(name, floor_new) + weight * s_recent.get(name, floor_recent)) / (1 + weight))
        for name in dict.fromkeys([*s_new, *s_recent])
    ]
    return sorted(fused, key=lambda f: f.score, reverse=True)


def rank_turn(
    found: Sequence[Sequence[Candidate]],
    *,
    lexical_weight: float,
    example_weight: float,
    context_weight: float,
    clear: float,
    vague: float,
) -> TurnRanking:
    """A turn's ranking from the candidates of its new turn and (second, when given) of its recent context.

    A turn vague enough for the context to count ("book the first one for John") is vague in
    its words too: they point at the context ("the first one"), not at a function, so the
    new turn's lexical share shrinks as the context's weight grows (to half at the full
    ``context_weight``: a vague turn may still name its action, "book TP 840").
    """
    recent = (
        adaptive(found[1], example_weight=example_weight, lexical_weight=lexical_weight)[0] if len(found) > 1 else []
    )
    weight = _context(found[0], weight=context_weight, clear=clear, vague=vague, recent=found[1]) if recent else 0.0
    share = lexical_weight * (1.0 - 0.5 * weight / context_weight) if weight > 0 else lexical_weight
    new, weights = adaptive(found[0], example_weight=example_weight, lexical_weight=share)
    return TurnRanking(fuse(new, recent, weight=weight), new, recent, weights, weight)


_context = context_weight


@dataclass(frozen=True)
class ExampleMatch:
    """The usage example closest to the turn, and the turn's cosine similarity to it."""

    text: str
    similarity: float


@dataclass(frozen=True)
class Explanation:
    """The parts of one function's score.

    Attributes:
        dense: cosine similarity of the new turn to the function's text.
        lexical: its BM25 score relative to the best candidate's (0..1).
        lexical_raw: the BM25 score itself.
        example: the usage example closest to the turn, when one counted.
        context_weight: the weight the recent context had for this turn.
        recent: the function's score for the recent-context query, when the context counted.
        weights: how much each signal counted for the new turn.
        score_new: the function's score for the new turn alone.
    """

    dense: float
    lexical: float
    lexical_raw: float
    example: ExampleMatch | None
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
    by_name = {c.name: c for c in new}
    best = max((c.lexical for c in new), default=0.0)
    own = {f.name: f.score for f in ranking.new}
    context = {f.name: f.score for f in ranking.recent} if ranking.context_weight > 0 else {}
    found: dict[str, Explanation] = {}
    for function in chosen:
        name = function.function.name
        # One found by the recent context only: the new turn's signals never saw it.
        candidate = by_name.get(name) or Candidate(name, 0.0)
        example = None
        if candidate.example is not None and candidate.example_text is not None:
            example = ExampleMatch(candidate.example_text, candidate.example)
        found[name] = Explanation(
            dense=candidate.cosine,
            lexical=candidate.lexical / best if best > 0 else 0.0,
            lexical_raw=candidate.lexical,
            example=example,
            context_weight=ranking.context_weight,
            recent=context.get(name) if context else None,
            weights=ranking.weights,
            score_new=own.get(name, 0.0),
        )
    return found
