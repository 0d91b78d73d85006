"""Fusion: one ranking from the signals of a request and of its recent context."""

from __future__ import annotations

from collections.abc import Sequence

from router.catalog import FunctionDef
from router.retrieval.scored import Candidate, ScoredFunction

__all__ = ["context_weight", "fuse", "hybrid"]


def hybrid(candidates: Sequence[Candidate], *, lexical_weight: float, example_weight: float) -> list[ScoredFunction]:
    """Rank candidates by meaning, words and usage together, best first.

    Each function scores ``(1 - a) * max(cosine, b * example) + a * lexical / best_lexical``:
    its cosine similarity to the request (or to the closest request it was called for, weighed
    by ``b``), mixed with its BM25 score relative to the best one among the candidates. The
    score stays similarity-like: at most 1, and equal to the cosine when no word or example
    adds anything else. A convex mix of scores rather than of ranks (RRF) keeps how far apart
    functions are, which is what measured best on BFCL (``benchmarks/RESULTS.md``).

    Args:
        candidates: what ``router.retrieval.candidates.candidates`` found.
        lexical_weight: ``a``, the share of the lexical score, in [0, 1].
        example_weight: ``b``, how much an example's similarity counts against the function's own.
    """
    best_lexical = max((c.lexical for c in candidates), default=0.0)
    scored = []
    for candidate in candidates:
        semantic = candidate.cosine
        if candidate.example is not None:
            semantic = max(semantic, example_weight * candidate.example)
        lexical = candidate.lexical / best_lexical if best_lexical > 0 else 0.0
        scored.append(ScoredFunction(candidate.function, (1 - lexical_weight) * semantic + lexical_weight * lexical))
    return sorted(scored, key=lambda f: (-f.score, f.function.name))


def context_weight(new: Sequence[Candidate], *, weight: float, clear: float, vague: float) -> float:
    """How much the recent context counts for a turn, given what the new turn alone found.

    A turn that names what it wants ("email Dana the report") needs no history, and letting
    history in only blurs it; a follow-up ("undo that", "same for Paris") matches nothing well
    and needs it. So the context gets all of ``weight`` when the new turn's best similarity
    (to a function or to a usage example) is at most ``vague``, none from ``clear`` up, and a
    share in between.
    """
    best = max((max(c.cosine, c.example or -1.0) for c in new), default=-1.0)
    if best <= vague:
        return weight
    if best >= clear:
        return 0.0
    return weight * (clear - best) / (clear - vague)


def fuse(new: Sequence[ScoredFunction], recent: Sequence[ScoredFunction], *, weight: float) -> list[ScoredFunction]:
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
    by_name: dict[str, FunctionDef] = {}
    s_new: dict[str, float] = {}
    s_recent: dict[str, float] = {}
    for found in new:
        by_name[found.function.name] = found.function
        s_new[found.function.name] = found.score
    for found in recent:
        by_name.setdefault(found.function.name, found.function)
        s_recent[found.function.name] = found.score
    fused = [
        ScoredFunction(
            function,
            (s_new.get(name, floor_new) + weight * s_recent.get(name, floor_recent)) / (1 + weight),
        )
        for name, function in by_name.items()
    ]
    return sorted(fused, key=lambda f: f.score, reverse=True)
