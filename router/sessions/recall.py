"""Which memories come back with a turn: the ones that matter for what the turn is about to do.

A preference rarely shares words with the request it matters for ("I am vegetarian" and
"a restaurant near the Louvre" have cosine -0.05), but it does with the routed function's
parameters ("dietary restrictions: vegetarian, vegan, allergies"). So a memory's relevance
reads three things, all from vectors already at hand:

- the turn: cosine of the memory to the new turn, or to the turn with its recent context;
- the routed functions: the best cosine of the memory to one of a function's *facets* (its
  purpose, and each parameter with its description and allowed values), weighted by how
  well the function was routed relative to the first one;
- the user's other memories: relevance is ranked among them and cut relative to the best
  (``margin``), above a low floor (``min_score``) that only keeps out what matters to nothing.

Facet vectors are embedded once per model and text and kept in a bounded cache; ranking is
a few small matrix products in numpy.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from router.catalog import FunctionDef
from router.embedding import Vectors
from router.sessions.memory import Memory, MemoryRows, MemoryStore

__all__ = ["FacetCache", "RecallSettings", "facet_texts", "rank", "recall"]

# A function's facets past these are left out (schemas with hundreds of properties exist).
MAX_FACETS = 24
_FACET_CHARS = 300
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


class Encoder(Protocol):
    """What recall needs of an embedder."""

    model_name: str

    async def embed(self, texts: Sequence[str], *, kind: str = ...) -> Vectors: ...


@dataclass(frozen=True)
class RecallSettings:
    """How memories are ranked and cut.

    Attributes:
        limit: at most this many memories come back.
        margin: a memory comes back when its relevance is within this of the best one's.
        min_score: and when it is at least this (relevance is in -1..1).
        function_weight: how much the routed functions count against the turn itself.
        context_weight: how much the turn with its recent context counts against the new turn alone.
    """

    limit: int = 3
    margin: float = 0.05
    min_score: float = 0.12
    function_weight: float = 0.5
    context_weight: float = 0.8


def _words(identifier: str) -> str:
    return " ".join(w.lower() for w in _WORDS.findall(identifier)) or identifier


def _schema_text(name: str, schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return _words(name)
    parts = [schema.get("description")] if isinstance(schema.get("description"), str) else []
    choices = schema.get("enum") or (schema.get("items") or {}).get("enum") if isinstance(schema, Mapping) else None
    if isinstance(choices, list) and choices:
        parts.append(", ".join(str(c) for c in choices[:12]))
    text = f"{_words(name)}: {'; '.join(p for p in parts if p)}" if parts else _words(name)
    return text[:_FACET_CHARS]


def facet_texts(function: FunctionDef) -> list[str]:
    """What of a function a memory can matter to: its purpose, then each parameter.

    ``find_restaurants`` gives ``"find restaurants: Find restaurants near ..."`` and
    ``"dietary restrictions: vegetarian, vegan, gluten-free"``.
    """
    head = f"{_words(function.name)}: {function.description}" if function.description else _words(function.name)
    properties = function.parameters.get("properties")
    params = [_schema_text(k, v) for k, v in properties.items()] if isinstance(properties, Mapping) else []
    return [head[:_FACET_CHARS], *params][:MAX_FACETS]


class FacetCache:
    """Facet vectors by model and text, least recently used dropped first.

    Args:
        capacity: how many vectors are kept (384 float32 each for the default model: 1.5 kB).
    """

    def __init__(self, *, capacity: int = 20_000) -> None:
        self._capacity = capacity
        self._vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, model: str, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each text (None when not cached)."""
        with self._lock:
            found: list[np.ndarray | None] = []
            for text in texts:
                vector = self._vectors.get((model, text))
                if vector is not None:
                    self._vectors.move_to_end((model, text))
                found.append(vector)
            return found

    def put(self, model: str, texts: Sequence[str], vectors: Vectors) -> None:
        """Keep vectors of ``texts``."""
        with self._lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._vectors[(model, text)] = np.asarray(vector, dtype=np.float32)
            while len(self._vectors) > self._capacity:
                self._vectors.popitem(last=False)

    async def vectors(self, encoder: Encoder, texts: Sequence[str]) -> list[np.ndarray]:
        """The vector of each text, embedding (once) those not cached."""
        model = encoder.model_name
        found = self.get(model, texts)
        missing = list(dict.fromkeys(t for t, v in zip(texts, found, strict=True) if v is None))
        if missing:
            self.put(model, missing, await encoder.embed(missing, kind="catalog"))
            found = self.get(model, texts)
        return [v for v in found if v is not None]


def rank(
    rows: MemoryRows,
    turn: np.ndarray,
    *,
    recent: np.ndarray | None = None,
    functions: Sequence[tuple[float, np.ndarray]] = (),
    settings: RecallSettings | None = None,
) -> list[Memory]:
    """The memories that matter for the turn, most relevant first.

    Args:
        rows: the scope's memories with their vectors.
        turn: the new turn's vector.
        recent: the vector of the turn with its recent context, when it has one.
        functions: each routed function's score and its facet vectors (one row per facet).
        settings: ranking and cut-off.
    """
    settings = settings or RecallSettings()
    count = len(rows.texts)
    if not count or settings.limit <= 0:
        return []
    # One product for every query vector: small matrices cost their call more than their size.
    queries = [np.asarray(turn, dtype=np.float32)[None, :]]
    if recent is not None:
        queries.append(np.asarray(recent, dtype=np.float32)[None, :])
    queries += [np.asarray(facets, dtype=np.float32) for _, facets in functions]
    scores = rows.vectors @ np.concatenate(queries).T
    relevance: np.ndarray = scores[:, 0]
    if recent is not None:
        relevance = np.maximum(relevance, settings.context_weight * scores[:, 1])
    if functions:
        best = max(score for score, _ in functions)
        through = np.full(count, -1.0, dtype=np.float32)
        column = len(queries) - len(functions)
        for score, facets in functions:
            weight = float(np.clip(score / best, 0.0, 1.0)) if best > 0 else 1.0
            through = np.maximum(through, weight * scores[:, column : column + len(facets)].max(axis=1))
            column += len(facets)
        relevance = (relevance + settings.function_weight * through) / (1.0 + settings.function_weight)
    order = np.argsort(-relevance, kind="stable")[: settings.limit]
    top = float(relevance[order[0]])
    least = max(settings.min_score, top - settings.margin)
    return [Memory(rows.texts[i], float(relevance[i])) for i in order if relevance[i] >= least]


async def _embed_missing(rows: MemoryRows, encoder: Encoder, store: MemoryStore | None) -> MemoryRows:
    # Memories stored by a version that kept no vector in the payload: embedded once, then kept.
    ids, texts = [i for i, _ in rows.unembedded], [t for _, t in rows.unembedded]
    vectors = await encoder.embed(texts, kind="memory")
    if store is not None:
        await asyncio.to_thread(store.keep_vectors, ids, vectors)
    return rows.with_vectors(texts, vectors)


async def recall(
    rows: MemoryRows,
    vectors: Vectors,
    functions: Sequence[tuple[FunctionDef, float]],
    *,
    encoder: Encoder,
    cache: FacetCache,
    store: MemoryStore | None = None,
    settings: RecallSettings | None = None,
) -> list[Memory]:
    """Rank the scope's memories for a turn routed to ``functions``.

    Args:
        rows: the scope's memories with their vectors.
        vectors: the new turn's vector, then (when used) the turn with its recent context.
        functions: the routed functions (pinned ones left out) with their scores.
        encoder: embeds facets not cached yet.
        cache: facet vectors already embedded.
        store: where memories stored without a vector in their payload get it (once).
        settings: ranking and cut-off.
    """
    if not len(rows):
        return []
    if rows.unembedded:
        rows = await _embed_missing(rows, encoder, store)
    texts = [facet_texts(f) for f, _ in functions]
    flat = await cache.vectors(encoder, [t for group in texts for t in group])
    facets: list[tuple[float, np.ndarray]] = []
    start = 0
    for (_, score), group in zip(functions, texts, strict=True):
        facets.append((score, np.stack(flat[start : start + len(group)])))
        start += len(group)
    turn = np.asarray(vectors[0], dtype=np.float32)
    recent = np.asarray(vectors[1], dtype=np.float32) if len(vectors) > 1 else None
    return rank(rows, turn, recent=recent, functions=facets, settings=settings)
