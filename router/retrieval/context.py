"""A turn's ranking: its whole text and each of its parts ranked by one rule, sharing the top-N.

A turn is searched as several queries (``TurnQueries``): its whole text, each part it asks
(``router.retrieval.parts``) when it asks several things, and, with a session, its recent
context. Each query's candidates are ranked by ``router.retrieval.fusion.scored``. Then:

- **context** only for a vague turn: when the whole turn's best similarity (to a function or
  a usage example) is under ``vague`` and the context found candidates, its ranking becomes
  ``(s_new + w * s_recent) / (1 + w)`` over the union of both queries' candidates (a function
  missing from one gets that query's lowest score, an upper bound of its own), and its words
  count half (``s_new`` with ``a / 2``). A vague turn that only changes the values of the
  request before it ("And AF 456?", ``router.retrieval.ellipsis``) asks what its context asked:
  it is ranked by the context's query alone (``context_only``);
- **parts share the top-N**: the rankings take turns, the whole turn's first, then the parts'
  by score; round ``r`` adds each one's ``r``-th best unless another already took it. One part
  cannot crowd out another, and a request that only reads as one thing together keeps its place
  through the whole turn's ranking. A function's score is its score for the query it was taken
  for. A one-part turn is its whole turn's ranking alone. A part takes turns when a function or
  example is as near as ``vague`` or, in English, it opens on an action (``asks_action``): one
  that only sets the scene ("I am a photographer.") takes no place from the steps.

Companions (functions usually called with a routed one) follow (``router.retrieval.companions``).
Everything is arithmetic over a few hundred candidates, with no search and no model call;
``router.retrieval.explained`` says why, only when a route asks for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from router.retrieval.fusion import Terms, Weights, scored
from router.retrieval.parts import asks_action
from router.retrieval.scored import Candidate, Ranked


@dataclass(frozen=True)
class TurnQueries:
    """The candidates of each query of a turn.

    Attributes:
        whole: the whole new turn's.
        parts: each part's text and candidates, in order (empty when the turn asks one thing).
        recent: the recent context's (the last messages, and the new turn unless it is elliptical),
            when there is a session.
        elliptical: the new turn only changes the values of the request before it ("And AF 456?").
        english: the turn is in English, whose parts ``asks_action`` reads (in another, all take turns).
    """

    whole: Sequence[Candidate]
    parts: Sequence[tuple[str, Sequence[Candidate]]] = ()
    recent: Sequence[Candidate] | None = None
    elliptical: bool = False
    english: bool = True


@dataclass(frozen=True)
class Found:
    """Why a function is in a turn's ranking.

    Attributes:
        terms: its terms for the query it was taken for (divided by ``1 + w`` under context).
        part: the part of the turn it was taken for (None: the whole turn).
        context: the recent context's term, ``w * s_recent / (1 + w)`` (0 without context).
        unseen: for a function the whole turn's search missed, that query's lowest score
            (divided like the terms): the stand-in for its own score under context.
        recent: its score for the recent-context query, when the context counted.
        alone: its score for its own query, before the context.
    """

    terms: Terms
    part: str | None = None
    context: float = 0.0
    unseen: float = 0.0
    recent: float | None = None
    alone: float | None = None

    @property
    def score(self) -> float:
        """What the route returns as the function's score."""
        return self.terms.score + self.context + self.unseen


@dataclass(frozen=True)
class TurnRanking:
    """A turn's ranking, with what produced it.

    Attributes:
        functions: the final ranking (the turns of the queries' rankings).
        found: why each function of ``functions`` is there, by name.
        weights: the rule's weights for the whole turn (``usage`` is ``b``; the words' share is
            halved for a vague turn's own words).
        part_lexical: the words' share for the turn's parts (the rule's own).
        context_weight: ``w``, the weight the recent context had (0: a clear turn; 1: ``as_context``).
        as_context: the whole turn was ranked by its recent context alone (an elliptical vague turn).
    """

    functions: list[Ranked]
    found: dict[str, Found]
    weights: Weights
    part_lexical: float
    context_weight: float = 0.0
    as_context: bool = False


def best_similarity(found: Sequence[Candidate]) -> float:
    """The best similarity of a query's candidates, to a function or to a usage example."""
    return max((max(c.cosine, c.example or -1.0) for c in found), default=-1.0)


def with_context(new: Sequence[Terms], recent: Sequence[Terms], *, weight: float) -> list[Found]:
    """The whole turn's ranking nudged by its recent context's: ``(s_new + w * s_recent) / (1 + w)``, best first."""
    if not recent or weight <= 0:
        return [Found(t) for t in new]
    floor_new = new[-1].score if new else 0.0
    floor_recent = recent[-1].score
    own = {t.name: t for t in new}
    context = {t.name: t.score for t in recent}
    share = 1.0 / (1.0 + weight)
    fused: list[Found] = []
    for name in dict.fromkeys([*own, *context]):
        terms = own.get(name)
        s_recent = context.get(name, floor_recent)
        scaled = Terms(name, terms.dense * share, terms.usage * share, terms.lexical * share) if terms else None
        fused.append(
            Found(
                scaled or Terms(name, 0.0, 0.0, 0.0),
                context=weight * share * s_recent,
                unseen=0.0 if terms else floor_new * share,
                recent=s_recent,
                alone=terms.score if terms else floor_new,
            )
        )
    fused.sort(key=lambda f: (-f.score, f.terms.name))
    return fused


def context_ranking(new: Sequence[Terms], recent: Sequence[Terms]) -> list[Found]:
    """The context's ranking standing for the whole turn's: each function scores its context score."""
    floor_new = new[-1].score if new else 0.0
    alone = {t.name: t.score for t in new}
    return [Found(t, recent=t.score, alone=alone.get(t.name, floor_new)) for t in recent]


def take_turns(rankings: Sequence[Sequence[Found]]) -> list[Found]:
    """The rankings taking turns: round ``r`` adds the first ranking's ``r``-th best, then the others' by score.

    The whole turn's leads every round; the others' ``r``-th best follow, the best scored first
    (in text order, Complete@5 was 0.65 rather than 0.70 on BFCL, 0.83 rather than 0.88 on
    Seal-Tools), each unless taken. A part whose best another took is served for that round
    (taking its next one gave Seal-Tools' Complete@5 0.87 rather than 0.88, gaining nowhere).
    """
    taken: dict[str, Found] = {}
    lead, *others = rankings
    for rank in range(max((len(r) for r in rankings), default=0)):
        picks = [lead[rank]] if rank < len(lead) else []
        picks += sorted((r[rank] for r in others if rank < len(r)), key=lambda f: -f.score)
        for found in picks:
            taken.setdefault(found.terms.name, found)
    return list(taken.values())


def rank_turn(
    queries: TurnQueries, *, lexical_weight: float, example_weight: float, context_weight: float, vague: float
) -> TurnRanking:
    """A turn's ranking from the candidates of its queries (see the module's description)."""
    rule = {"lexical_weight": lexical_weight, "example_weight": example_weight}
    vague_turn = bool(queries.recent) and best_similarity(queries.whole) < vague
    weight = context_weight if vague_turn else 0.0
    recent = scored(queries.recent, **rule) if queries.recent and weight else []
    # "And AF 456?" names no action of its own: it asks again what its context asked.
    context_alone = bool(recent) and queries.elliptical
    # A vague turn's words point at its context ("book the first one"), yet may name the action: they count half.
    share = lexical_weight / 2 if weight and not context_alone else lexical_weight
    new = scored(queries.whole, lexical_weight=share, example_weight=example_weight)
    whole = context_ranking(new, recent) if context_alone else with_context(new, recent, weight=weight)
    asking = [(t, f) for t, f in queries.parts if best_similarity(f) >= vague or not queries.english or asks_action(t)]
    rankings = [whole, *([Found(t, part=text) for t in scored(found, **rule)] for text, found in asking)]
    chosen = take_turns(rankings) if len(rankings) > 1 else whole
    return TurnRanking(
        [Ranked(f.terms.name, f.score) for f in chosen],
        {f.terms.name: f for f in chosen},
        Weights(dense=1.0 - share, lexical=share, usage=example_weight),
        lexical_weight,
        1.0 if context_alone else weight,
        context_alone,
    )
