"""Which stored requests speak for a new request: how far one run reaches, and when runs outvote it.

A usage example (``router.retrieval.examples``) lifts its function for the requests that ask
what it asked. One run is an anecdote, perhaps a mistake whose call succeeded; many runs that
agree are evidence. These rules weigh one against the other, from the stored requests found
near the new one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# A request this close to a stored one asks the same thing, perhaps of other values ("a hotel in Rome for
# three nights" and "in Paris for two", all-MiniLM-L6-v2 cosine 0.64): one run speaks for it alone; each
# further stored request that agrees widens the reach (``agree``). 0.6 kept APIBench's first learning
# step at the ungated ranking; 0.7 and 0.8 cost it (benchmarks/RESULTS.md, docs/scoring.md).
# The rules read similarities on all-MiniLM-L6-v2's scale; another model's are put on it (``Reach``).
SAME = 0.6


@dataclass(frozen=True)
class Reach:
    """Where one model's cosine between two requests says that they ask the same thing.

    Models spread requests differently: multilingual-e5-small puts unrelated requests at
    cosine 0.8, where all-MiniLM-L6-v2 puts them under 0.1. ``same`` is the model's cosine at
    which two requests ask the same thing (``SAME`` for all-MiniLM-L6-v2); ``scaled`` puts a
    cosine on all-MiniLM-L6-v2's scale, where the rules of this module and the merging of
    near-duplicate examples read it: the distance from 1 grows by ``(1 - SAME) / (1 - same)``.
    That reading is exact at ``same`` and near it, not far below: the wider reach of runs that
    agree (``agree``) is all-MiniLM-L6-v2's alone (``widens``).
    """

    same: float = SAME

    def __post_init__(self) -> None:
        if not 0.0 < self.same < 1.0:
            raise ValueError(f"a same-request cosine is in (0, 1), not {self.same}")

    @property
    def widens(self) -> bool:
        """Whether runs that agree reach wider than one (all-MiniLM-L6-v2's ``SAME`` only).

        Read through ``scaled``, multilingual-e5-small's cosines put the reach of three runs
        that agree (0.216) at 0.80, where 42% of BFCL's pairs of requests wanting different
        functions lie, against 8% at all-MiniLM-L6-v2's 0.216 (docs/scoring.md).
        """
        return self.same == SAME

    def scaled(self, similarity: float) -> float:
        """``similarity`` on all-MiniLM-L6-v2's scale (itself when ``same`` is ``SAME``)."""
        if self.same == SAME:
            return similarity  # exactly: the default model's rules read its cosines as they are
        return 1.0 - (1.0 - similarity) * (1.0 - SAME) / (1.0 - self.same)


DEFAULT_REACH = Reach()


def agree(similarities: Sequence[float], reach: Reach = DEFAULT_REACH) -> bool:
    """Whether a function's stored requests speak for a request, from their similarities to it, closest first.

    One stored request speaks only for requests that mean the same thing (``SAME``); ``k``
    of them, all within ``SAME**k``, speak for a wider neighbourhood: one run (a mistake, or
    a user steering the namespace) moves its function only for its own request, while a
    function many runs called for a kind of request rises for that whole kind. The
    similarities are on all-MiniLM-L6-v2's scale; with a ``reach`` that does not widen, only
    the closest counts.
    """
    if not reach.widens:
        return bool(similarities) and similarities[0] >= SAME
    return any(s >= SAME ** (k + 1) for k, s in enumerate(similarities))


@dataclass(frozen=True)
class Stored:
    """A stored request found near a new one.

    Attributes:
        name: the function it called.
        similarity: its cosine similarity to the new request.
        vector: its embedding (None: not read).
        together: the other functions its run called for it.
    """

    name: str
    similarity: float
    vector: Sequence[float] | None
    together: Sequence[str] = ()


def overruled(stored: Sequence[Stored], reach: Reach = DEFAULT_REACH) -> set[str]:
    """The functions whose examples the stored requests near a new one overrule (``stored`` closest first).

    A run that called ``g`` where others called ``f`` for the same request (a mistake whose
    call succeeded) is outvoted by them. ``g`` is overruled when, among the stored requests
    that ask the same thing as the new one (within ``SAME`` of it), another function ``f``
    was called by more of them, the nearest of them is nearer than any of ``g``'s, one of them
    asks what ``g``'s closest asks (within ``SAME`` of it), and no run among them (nor ``g``'s
    closest) called both: functions called together serve different parts of a request, and
    a nearer request is not outvoted by farther ones. The similarities of ``stored`` are on
    all-MiniLM-L6-v2's scale; ``reach`` puts those between their vectors on it too.
    """
    closest: dict[str, Stored] = {}
    near: dict[str, list[Stored]] = {}
    for found in stored:
        closest.setdefault(found.name, found)
        if found.similarity >= SAME:
            near.setdefault(found.name, []).append(found)

    def called_together(f: str, g: str) -> bool:
        mine = [closest[g], *near.get(g, ())]
        return any(g in r.together for r in near[f]) or any(f in r.together for r in mine)

    challenged = [
        (g, f)
        for g, own in closest.items()
        for f, runs in near.items()
        if f != g and len(runs) > len(near.get(g, ())) and runs[0].similarity > own.similarity
        and not called_together(f, g)
    ]  # fmt: skip
    if not challenged:
        return set()
    # Whether f's runs asked what g's closest asked: one product of the vectors involved.
    involved = {id(r): r for g, f in challenged for r in (closest[g], *near[f]) if r.vector is not None}
    rows = {key: i for i, key in enumerate(involved)}
    vectors = np.asarray([r.vector for r in involved.values()], dtype=np.float32)
    similar = vectors @ vectors.T if len(vectors) else vectors
    left_out: set[str] = set()
    for g, f in challenged:
        own = rows.get(id(closest[g]))
        if own is not None and any(
            id(r) in rows and reach.scaled(float(similar[own, rows[id(r)]])) >= SAME for r in near[f]
        ):
            left_out.add(g)
    return left_out
