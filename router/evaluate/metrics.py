"""The figures of an evaluation, from the rank each method gave each expected function.

A *rank* is 1 for the first function returned, 0 for a function returned with every route
(pinned), and ``None`` for one not returned within the depth ranked. Definitions:

- **R@k**: the share of a case's expected functions that are in the top k, averaged over cases.
- **all@k**: the share of cases whose expected functions are *all* in the top k (the turn can
  be completed from what was returned).
- **MRR**: the mean over cases of 1 / the rank of the first expected function found (0 when
  none is found).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

KS = (1, 3, 5, 10)
# The deepest rank looked at: a needed function further down counts as not returned.
DEPTH = 100
# The share of cases that must be complete for a max_functions to be recommended.
COMPLETE_SHARE = 0.95

Ranks = Mapping[str, int | None]


def _within(rank: int | None, k: int) -> bool:
    return rank is not None and rank <= k


def recall_at(ranked: Sequence[Ranks], k: int) -> float:
    """R@k: the share of each case's expected functions in its top ``k``, averaged over cases."""
    if not ranked:
        return 0.0
    return sum(sum(_within(r, k) for r in case.values()) / len(case) for case in ranked) / len(ranked)


def complete_at(ranked: Sequence[Ranks], k: int) -> float:
    """all@k: the share of cases with every expected function in the top ``k``."""
    if not ranked:
        return 0.0
    return sum(all(_within(r, k) for r in case.values()) for case in ranked) / len(ranked)


def reciprocal_rank(case: Ranks) -> float:
    """1 / the rank of the first expected function found (a pinned one counts as first); 0 when none is."""
    found = [r for r in case.values() if r is not None]
    return 1 / max(1, min(found)) if found else 0.0


def mean_reciprocal_rank(ranked: Sequence[Ranks]) -> float:
    """MRR over the cases."""
    return sum(map(reciprocal_rank, ranked)) / len(ranked) if ranked else 0.0


@dataclass(frozen=True)
class Figures:
    """One method's figures over a set of cases."""

    recall: dict[int, float]
    complete: dict[int, float]
    mrr: float

    @classmethod
    def of(cls, ranked: Sequence[Ranks], ks: Sequence[int] = KS) -> Figures:
        """The figures at each of ``ks``."""
        return cls(
            {k: recall_at(ranked, k) for k in ks},
            {k: complete_at(ranked, k) for k in ks},
            mean_reciprocal_rank(ranked),
        )


def smallest_complete(ranked: Sequence[Ranks], depth: int, share: float = COMPLETE_SHARE) -> int | None:
    """The smallest k (at most ``depth``) whose all@k reaches ``share``; None when none does."""
    if not ranked:
        return None
    # A case is complete from the rank of its last expected function on.
    needed = sorted(max(math.inf if r is None else r for r in case.values()) for case in ranked)
    enough = max(1, math.ceil(share * len(needed) - 1e-9))
    worst = needed[enough - 1]
    return None if worst > depth else max(1, int(worst))


@dataclass(frozen=True)
class Miss:
    """A case that did not get a function it needed within the top k."""

    case: int
    rank: int | None


def misses(ranked: Sequence[Ranks], k: int) -> dict[str, list[Miss]]:
    """Each function missed (not in the top ``k``) with the cases that missed it, most often missed first."""
    found: dict[str, list[Miss]] = {}
    for position, case in enumerate(ranked):
        for name, rank in case.items():
            if not _within(rank, k):
                found.setdefault(name, []).append(Miss(position, rank))
    return dict(sorted(found.items(), key=lambda item: (-len(item[1]), item[0])))
