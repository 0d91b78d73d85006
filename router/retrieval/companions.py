"""Companions: functions that runs call together (search then book, get then update).

Every turn of a stored run is kept as one point: the functions it called successfully, in
the order they were first called (a failed call is never in; a call the model corrected is,
since search-then-book and a correction look alike, and ``MIN_RUNS`` keeps one-off pairs out).
Its id comes from the session and the turn, so a turn whose results arrive over several
posts is rewritten, never counted twice. The points hold no vectors: a new model keeps them;
a function that changes or is removed takes the runs that called it with it, as its usage
examples go.

When a function is routed, the functions its runs called with it become candidates: a
companion ``b`` of an anchor ``a`` scores ``score(a) x (with + follows) / (2 x (runs + 1))``,
where ``runs`` counts the stored runs that called ``a``, ``with`` those of them that also called
``b`` and ``follows`` those that called ``b`` right after ``a``: below its anchor always, and
closer to it the more runs agree. A pair needs ``MIN_RUNS``
runs, as one run moves a usage example only for its own request: one run (a mistake, or one
user steering the namespace) makes no companion.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection as Collection_
from collections.abc import Sequence
from dataclasses import dataclass

from router.retrieval.scored import Ranked
from router.storage.base import Collection, CollectionSpec, PointData, Storage

SPEC = CollectionSpec(
    name="companions", tenant_field="namespace", keyword_fields=("functions",), integer_fields=("seq",)
)
# Runs that agree before a pair counts: one run is an anecdote (see the module's docstring).
MIN_RUNS = 2
# Companions per routed function, and the share of a turn's top-N they may take: the ranking leads.
PER_ANCHOR = 2
SHARE = 1 / 3
# The runs read per route, newest first: enough for the counts, bounded for the route's time.
RUNS_READ = 500
_IDS = uuid.UUID("0b7a4c2e-6f31-4d85-9e1a-3c5d7f9b2a64")


@dataclass(frozen=True)
class Companion:
    """A function added to a turn's ranking because runs call it with ``companion_of``."""

    name: str
    score: float
    companion_of: str


class CompanionStore:
    """The runs of every namespace, as the ordered functions each turn called."""

    def __init__(self, collection: Collection) -> None:
        self.collection = collection

    @classmethod
    def open(cls, storage: Storage) -> CompanionStore:
        """Open (creating when missing) the companions collection."""
        return cls(storage.collection(SPEC))

    def observe(self, namespace: str, run: str, functions: Sequence[str]) -> None:
        """Keep the functions one turn of a run called, in order (``run`` names the turn, e.g. session and turn)."""
        point = str(uuid.uuid5(_IDS, f"{namespace}\x00{run}"))
        names = list(dict.fromkeys(functions))
        if len(names) < 2:
            self.collection.delete([point])
            return
        payload: dict[str, object] = {"namespace": namespace, "functions": names, "seq": time.time_ns() // 1_000}
        self.collection.upsert([PointData(id=point, payload=payload)])

    def runs(self, namespace: str, anchors: Sequence[str]) -> list[list[str]]:
        """The latest runs of ``namespace`` that called any of ``anchors``."""
        match = {"namespace": namespace, "functions": list(anchors)}
        return [list(r.payload["functions"]) for r in self.collection.latest(match, order_by="seq", limit=RUNS_READ)]

    def forget(self, namespace: str, names: Sequence[str] | None = None) -> None:
        """Delete the runs that called any of ``names`` (every run of ``namespace`` when None)."""
        if names is None:
            self.collection.delete_where({"namespace": namespace})
        else:
            self.collection.delete_where({"namespace": namespace, "functions": list(names)})

    def count(self, namespace: str) -> int:
        """How many runs of ``namespace`` are kept."""
        return self.collection.count({"namespace": namespace})


def companions(store: CompanionStore, namespace: str, ranking: Sequence[Ranked], max_functions: int) -> list[Companion]:
    """The companions of a turn's ranking, best first, each with the routed function it accompanies.

    The first ``max_functions`` of ``ranking`` are the anchors; each brings at most
    ``PER_ANCHOR`` companions, and a function gets the best score any anchor gives it.
    """
    anchors = ranking[:max_functions]
    if not anchors:
        return []
    runs = store.runs(namespace, [a.name for a in anchors])
    best: dict[str, Companion] = {}
    for anchor in anchors:
        for name, strength in _strengths(anchor.name, runs)[:PER_ANCHOR]:
            score = anchor.score * strength
            if name not in best or score > best[name].score:
                best[name] = Companion(name, score, anchor.name)
    return sorted(best.values(), key=lambda c: (-c.score, c.name))


def _strengths(anchor: str, runs: Sequence[Sequence[str]]) -> list[tuple[str, float]]:
    """Each function called with ``anchor`` in ``MIN_RUNS`` runs or more, by ``(with + follows) / (2 x (runs + 1))``."""
    together: dict[str, int] = {}
    follows: dict[str, int] = {}
    total = 0
    for run in runs:
        if anchor not in run:
            continue
        total += 1
        at = run.index(anchor)
        for name in run:
            if name != anchor:
                together[name] = together.get(name, 0) + 1
        if at + 1 < len(run):
            follows[run[at + 1]] = follows.get(run[at + 1], 0) + 1
    ranked = [
        (name, (count + follows.get(name, 0)) / (2 * (total + 1)))
        for name, count in together.items()
        if count >= MIN_RUNS
    ]
    return sorted(ranked, key=lambda p: (-p[1], p[0]))


def with_companions(
    store: CompanionStore,
    namespace: str,
    ranking: Sequence[Ranked],
    max_functions: int,
    *,
    excluded: Collection_[str] = (),
    floor: float | None = None,
) -> tuple[list[Ranked], dict[str, str]]:
    """``ranking`` with its companions in (none of ``excluded``, none under ``floor``); see ``merged``.

    At most ``SHARE`` of ``max_functions`` companions (at least one) come in, counting only
    those that move: one already ranked before its anchor takes no place.
    """
    place = {r.name: i for i, r in enumerate(ranking)}
    found = [
        c
        for c in companions(store, namespace, ranking, max_functions)
        if c.name not in excluded and (floor is None or c.score >= floor) and _moves(c, place)
    ]
    return merged(ranking, found[: max(1, int(max_functions * SHARE))])


def merged(ranking: Sequence[Ranked], found: Sequence[Companion]) -> tuple[list[Ranked], dict[str, str]]:
    """``ranking`` with the companions in, and which function each companion moved accompanies.

    The ranking keeps its order (a turn's parts take turns in it, so it is not sorted by score);
    each companion of ``found`` (those that move, ``with_companions``) comes right after the
    function it accompanies, with the larger of its own score and its companion score.
    """
    own = {r.name: r.score for r in ranking}
    moved = {c.name: c for c in found}
    following: dict[str, list[Companion]] = {}
    for companion in sorted(moved.values(), key=lambda c: (-c.score, c.name)):
        following.setdefault(companion.companion_of, []).append(companion)
    ordered: list[Ranked] = []
    for ranked in ranking:
        if ranked.name in moved:
            continue
        ordered.append(ranked)
        ordered += [Ranked(c.name, max(c.score, own.get(c.name, c.score))) for c in following.get(ranked.name, [])]
    return ordered, {name: c.companion_of for name, c in moved.items()}


def _moves(companion: Companion, place: dict[str, int]) -> bool:
    """Whether the companion would come closer to the top: it is not ranked at or right after its anchor's place."""
    anchor = place[companion.companion_of]
    return companion.name != companion.companion_of and place.get(companion.name, anchor + 2) > anchor + 1
