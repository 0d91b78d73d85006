"""Candidates of a request: the functions near it by meaning, by words or by past usage.

Each signal searches on its own; the union of what they find then gets every signal's
exact score, so no score is guessed for a function that another signal found. Candidates are
names with their scores and content hash: fusion needs nothing more, and only the functions a
ranking chooses have their definitions read (``FunctionStore.definitions``).
"""

from __future__ import annotations

from collections.abc import Sequence

from router.retrieval.examples import Nearest
from router.retrieval.index import HIT_FIELDS, FunctionStore
from router.retrieval.scored import Candidate, Ranked, ScoredFunction
from router.storage.base import Hit, Search, SparseVector


def candidates(
    store: FunctionStore,
    namespace: str,
    dense: Sequence[float],
    sparse: SparseVector,
    *,
    limit: int,
    examples: bool = True,
) -> list[Candidate]:
    """The functions of ``namespace`` near a request by meaning, by words or by past usage.

    The ``limit`` best of each signal are united; every candidate then gets its exact
    cosine and BM25 score, so no signal is guessed for a function another one found.

    Args:
        store: the function store of the generation in use.
        namespace: the catalog.
        dense: the request's embedding.
        sparse: the request's ``router.retrieval.sparse.query_vector``.
        limit: how many to take from each signal.
        examples: whether usage examples count.
    """
    match = {"namespace": namespace}
    first = [Search(dense=dense, match=match, limit=limit, fields=HIT_FIELDS)]
    if sparse.indices:
        first.append(Search(sparse=sparse, match=match, limit=limit, fields=HIT_FIELDS))
    found = store.collection.searches(first)
    hashes = {h.payload["name"]: h.payload["hash"] for hits in found for h in hits}
    cosine = {h.payload["name"]: h.score for h in found[0]}
    lexical = {h.payload["name"]: h.score for h in found[1]} if sparse.indices else {}
    # A sparse search returns every point sharing a term, up to the limit: below it, the rest score 0.
    complete_lexical = not sparse.indices or len(found[1]) < limit
    near = store.examples.nearest(namespace, dense, limit=limit) if examples else {}
    union = list(dict.fromkeys([*hashes, *near]))
    unscored = [name for name in union if name not in cosine]
    unmatched = [] if complete_lexical else [name for name in union if name not in lexical]
    for hit in _scores(store, namespace, dense, sparse, unscored, unmatched, cosine, lexical):
        hashes.setdefault(hit.payload["name"], hit.payload["hash"])
    return [
        _candidate(name, digest, cosine.get(name, 0.0), lexical.get(name, 0.0), near.get(name))
        for name, digest in hashes.items()
    ]


def named(
    store: FunctionStore, namespace: str, dense: Sequence[float], sparse: SparseVector, names: Sequence[str]
) -> list[Candidate]:
    """The named functions of ``namespace`` with their cosine and BM25 score for a request."""
    cosine: dict[str, float] = {}
    lexical: dict[str, float] = {}
    unmatched = names if sparse.indices else []
    hits = _scores(store, namespace, dense, sparse, names, unmatched, cosine, lexical)
    hashes = {h.payload["name"]: h.payload["hash"] for h in hits}
    return [Candidate(n, score, lexical.get(n, 0.0), hash=hashes[n]) for n, score in cosine.items()]


def resolved(store: FunctionStore, namespace: str, ranked: Sequence[Ranked], *, limit: int) -> list[ScoredFunction]:
    """The first ``limit`` of ``ranked`` with their definitions; one removed since its search is passed over."""
    chosen: list[ScoredFunction] = []
    start = 0
    while len(chosen) < limit and start < len(ranked):
        batch = ranked[start : start + limit - len(chosen)]
        start += len(batch)
        definitions = store.definitions(namespace, [r.name for r in batch])
        chosen.extend(ScoredFunction(definitions[r.name], r.score) for r in batch if r.name in definitions)
    return chosen


def _scores(
    store: FunctionStore,
    namespace: str,
    dense: Sequence[float],
    sparse: SparseVector,
    unscored: Sequence[str],
    unmatched: Sequence[str],
    cosine: dict[str, float],
    lexical: dict[str, float],
) -> list[Hit]:
    """Exact cosine of ``unscored`` and BM25 of ``unmatched`` (in one engine call), added to the dicts."""
    searches = []
    if unscored:
        match = {"namespace": namespace, "name": list(unscored)}
        searches.append(Search(dense=dense, match=match, limit=len(unscored), fields=HIT_FIELDS))
    if unmatched:
        match = {"namespace": namespace, "name": list(unmatched)}
        searches.append(Search(sparse=sparse, match=match, limit=len(unmatched), fields=HIT_FIELDS))
    if not searches:
        return []
    found = store.collection.searches(searches)
    if unscored:
        cosine.update((h.payload["name"], h.score) for h in found[0])
    if unmatched:
        lexical.update((h.payload["name"], h.score) for h in found[-1])
    return [h for hits in found for h in hits]


def _candidate(name: str, stored: str, cosine: float, lexical: float, near: Nearest | None) -> Candidate:
    # An example recorded against an older version of the function no longer speaks for it;
    # ``stored`` is the content hash the search returned, so nothing is hashed on the route.
    if near is None or near.hash != stored:
        return Candidate(name, cosine, lexical, hash=stored)
    return Candidate(name, cosine, lexical, near.similarity, near.text, hash=stored, example_runs=near.runs)
