"""A route's second storage hop: the turn's functions ranked and read, and its memories recalled.

It runs in one worker thread, after the query embedding, so that only the chosen functions'
definitions are read and the event loop never waits on storage.
"""

from __future__ import annotations

from collections.abc import Sequence

from router.catalog.records import CatalogRecord
from router.embedding import Vectors
from router.retrieval.candidates import candidates, resolved
from router.retrieval.catalogs import ActiveIndex, Catalogs
from router.retrieval.companions import with_companions
from router.retrieval.context import TurnQueries, rank_turn
from router.retrieval.explained import explain
from router.retrieval.sparse import query_vector
from router.routing.remembering import Remembering
from router.routing.routed import Routed, Turn
from router.routing.settings import RouteSettings
from router.sessions.memory import MemoryStore
from router.sessions.records import Memory, scope_of


def search_turn(
    catalogs: Catalogs,
    settings: RouteSettings,
    remembering: Remembering,
    index: ActiveIndex,
    turn: Turn,
    record: CatalogRecord | None,
    texts: Sequence[str],
    asked: Sequence[str],
    matrix: Vectors,
    memory_store: MemoryStore | None,
    *,
    elliptical: bool = False,
    english: bool = True,
) -> tuple[CatalogRecord, Routed]:
    """The turn's catalog record and its answer but for the history.

    Args:
        catalogs: where the record is read when the first hop did not read it.
        settings: routing defaults.
        remembering: what recalls the scope's memories.
        index: the index the turn was embedded for.
        turn: the turn.
        record: the catalog's record, when the first hop read it.
        texts: the whole turn, then its recent context when it has one.
        asked: each part the turn asks, when it asks several.
        matrix: the query vectors of ``texts`` then ``asked``.
        memory_store: the memories to recall from, when the turn has a scope and wants them.
        elliptical: the turn only changes the values of the request before it, its recent context
            (``router.retrieval.ellipsis``).
        english: the turn is in English, whose parts' actions the router reads.
    """
    vectors = [v.tolist() for v in matrix]
    if record is None:
        record = catalogs.known(turn.namespace)
    pinned_names = list(dict.fromkeys([*record.pinned, *turn.pinned]))
    # Pinned functions are left out of the ranking: searching that many further keeps it
    # from coming back empty when the nearest functions are all pinned.
    limit = max(settings.candidates, turn.max_functions * 4) + len(pinned_names)
    examples = settings.learn_from_usage
    queries = [*texts, *asked]
    frequencies = index.store.frequencies(turn.namespace, record.updated_at)
    found = [
        candidates(index.store, turn.namespace, v, query_vector(t, frequencies), limit=limit, examples=examples)
        for v, t in zip(vectors, queries, strict=True)
    ]
    whole = TurnQueries(
        found[0],
        parts=list(zip(asked, found[len(texts) :], strict=True)),
        recent=found[1] if len(texts) > 1 else None,
        elliptical=elliptical,
        english=english,
    )
    pinned = index.store.score_names(turn.namespace, vectors[0], pinned_names)
    ranking = rank_turn(
        whole,
        lexical_weight=index.lexical(settings.lexical_weight),
        example_weight=settings.example_weight,
        context_weight=settings.context_weight,
        vague=index.vague_mark(settings.context_vague),
    )
    left_out, floor = set(pinned_names), turn.min_score
    unpinned = [f for f in ranking.functions if f.name not in left_out]
    ranked = [f for f in unpinned if floor is None or f.score >= floor]
    below = 0 if floor is None else sum(f.score < floor for f in unpinned[: turn.max_functions])
    companion_of: dict[str, str] = {}
    if settings.companions and settings.learn_from_usage:
        ranked, companion_of = with_companions(
            index.store.companions, turn.namespace, ranked, turn.max_functions, excluded=left_out, floor=floor
        )
    chosen = resolved(index.store, turn.namespace, ranked, limit=turn.max_functions)
    scope = scope_of(session_id=turn.session_id, user_id=turn.user_id)
    memories: list[Memory] = []
    if memory_store is not None and scope is not None:
        rows = memory_store.rows(scope, [turn.namespace])
        memories = remembering.recall(index, turn.namespace, rows, chosen, matrix[: len(texts)], settings)
    explanations = explain(chosen, whole, ranking, companion_of) if turn.explain else {}
    recent = texts[1] if len(texts) > 1 else ""
    return record, Routed(
        chosen, pinned, texts[0], recent, memories=memories, explanations=explanations, below_min_score=below
    )
