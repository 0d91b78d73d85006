"""Candidates of a request: the functions near it by meaning, by words or by past usage.

Each signal searches on its own; the union of what they find then gets every signal's
exact score, so no score is guessed for a function that another signal found.
"""

from __future__ import annotations

from collections.abc import Sequence

from router.catalog import FunctionDef, function_from_payload
from router.retrieval.examples import Nearest
from router.retrieval.index import FunctionStore
from router.retrieval.scored import Candidate
from router.storage.base import Hit, SparseVector

__all__ = ["candidates", "named"]


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
    collection = store.collection
    match = {"namespace": namespace}
    found: dict[str, FunctionDef] = {}
    cosine: dict[str, float] = {}
    lexical: dict[str, float] = {}
    for hit in collection.search(dense=dense, match=match, limit=limit):
        found[hit.payload["name"]] = function_from_payload(hit.payload)
        cosine[hit.payload["name"]] = hit.score
    complete_lexical = True
    if sparse.indices:
        hits = collection.search(sparse=sparse, match=match, limit=limit)
        # A sparse search returns every point sharing a term, up to the limit: below it, the rest score 0.
        complete_lexical = len(hits) < limit
        for hit in hits:
            found.setdefault(hit.payload["name"], function_from_payload(hit.payload))
            lexical[hit.payload["name"]] = hit.score
    near = store.examples.nearest(namespace, dense, limit=limit) if examples and store.examples else {}
    unscored = [name for name in dict.fromkeys([*found, *near]) if name not in cosine]
    for hit in _named(store, namespace, dense, unscored):
        found.setdefault(hit.payload["name"], function_from_payload(hit.payload))
        cosine[hit.payload["name"]] = hit.score
    if not complete_lexical:
        unmatched = [name for name in found if name not in lexical]
        lexical.update((h.payload["name"], h.score) for h in _named(store, namespace, sparse, unmatched))
    return [
        _candidate(function, cosine.get(name, 0.0), lexical.get(name, 0.0), near.get(name))
        for name, function in found.items()
    ]


def named(
    store: FunctionStore, namespace: str, dense: Sequence[float], sparse: SparseVector, names: Sequence[str]
) -> list[Candidate]:
    """The named functions of ``namespace`` with their cosine and BM25 score for a request."""
    found = {
        h.payload["name"]: (function_from_payload(h.payload), h.score) for h in _named(store, namespace, dense, names)
    }
    matched = _named(store, namespace, sparse, list(found)) if sparse.indices else []
    lexical = {h.payload["name"]: h.score for h in matched}
    return [Candidate(function, cosine, lexical.get(name, 0.0)) for name, (function, cosine) in found.items()]


def _named(
    store: FunctionStore, namespace: str, query: Sequence[float] | SparseVector, names: Sequence[str]
) -> list[Hit]:
    if not names:
        return []
    match = {"namespace": namespace, "name": list(names)}
    if isinstance(query, SparseVector):
        return store.collection.search(sparse=query, match=match, limit=len(names))
    return store.collection.search(dense=query, match=match, limit=len(names))


def _candidate(function: FunctionDef, cosine: float, lexical: float, near: Nearest | None) -> Candidate:
    # An example recorded against an older version of the function no longer speaks for it.
    if near is None or near.hash != function.content_hash:
        return Candidate(function, cosine, lexical)
    return Candidate(function, cosine, lexical, near.similarity, near.text)
