"""What the router is measured against, computed by brute force with the router's own ``Embedder`` instance.

``router eval`` and the quality benchmark share these peers:

- **Semantic Kernel** (``FunctionStore`` / contextual function provider): embeds
  ``"Function name: X, description: Y"`` and searches with the last two messages plus the new
  one, joined.
- **langgraph-bigtool**: embeds ``"name: description"`` and searches with the request.
- **dense per sentence, interleaved**: the request split into sentences, each ranked like
  langgraph-bigtool's (``name: description``, cosine), the rankings interleaved round-robin
  with repeats dropped; a request of one sentence ranks as the dense peer does.
- **BM25** over name and description: Okapi BM25 (k1 1.5, b 0.75, the common defaults) on
  lower-cased alphanumeric words, with no stemming or identifier splitting beyond ``_``/``.``.

Every ranking is exact (numpy over all functions), so the baselines pay no index error.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from router.catalog.functions import FunctionDef
from router.embedding import Embedder

_WORDS = re.compile(r"[a-z0-9]+")
# A sentence ends at . ! or ? before white space, or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def semantic_kernel_text(function: FunctionDef) -> str:
    """Semantic Kernel's default function text."""
    return f"Function name: {function.name}, description: {function.description}"


def bigtool_text(function: FunctionDef) -> str:
    """langgraph-bigtool's function text."""
    return f"{function.name}: {function.description}"


class DenseBaseline:
    """Exact cosine ranking of functions embedded with one text template.

    Args:
        embedder: the model (the router's own instance).
        functions: the catalog.
        text: how a function becomes text.
        progress: called with (done, total) while the catalog is embedded.
    """

    def __init__(
        self,
        embedder: Embedder,
        functions: Sequence[FunctionDef],
        text: Callable[[FunctionDef], str],
        *,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.names = [f.name for f in functions]
        texts = [text(f) for f in functions]
        # Encoded shortest first (less padding, as the router's own sync does), then put back in order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        encoded = embedder.encode([texts[i] for i in order], progress=progress)
        self.vectors = np.empty_like(encoded)
        self.vectors[order] = encoded

    def rank(self, queries: npt.NDArray[np.float32], *, k: int = 10) -> list[list[str]]:
        """The ``k`` best function names for each query vector (all of them, best first, when fewer)."""
        k = min(k, len(self.names))
        if k == 0:
            return [[] for _ in range(len(queries))]
        scores = queries @ self.vectors.T
        top = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
        return [[self.names[j] for j in row] for row in np.take_along_axis(top, order, axis=1)]


def sentences(text: str) -> list[str]:
    """The request's sentences, in order (the whole text, stripped, when it has one)."""
    parts = [part.strip() for part in _SENTENCE_END.split(text)]
    return [part for part in parts if part] or [text.strip()]


def interleave(rankings: Sequence[Sequence[str]], *, k: int = 10) -> list[str]:
    """Round-robin over ``rankings`` (first of each, then second of each...), repeats dropped, ``k`` at most."""
    merged: dict[str, None] = {}
    for rank in range(max(map(len, rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking):
                merged.setdefault(ranking[rank])
    return list(merged)[:k]


class PerSentenceBaseline:
    """The dense peer applied to each sentence of a request, the rankings interleaved.

    Args:
        dense: the ``name: description`` peer whose embeddings it ranks.
        embedder: the model that embeds the sentences (the router's own instance).
    """

    def __init__(self, dense: DenseBaseline, embedder: Embedder) -> None:
        self.dense = dense
        self._embedder = embedder

    async def rank(self, requests: Sequence[str], *, k: int = 10) -> list[list[str]]:
        """The ``k`` best function names for each request."""
        split = [sentences(request) for request in requests]
        flat = [sentence for parts in split for sentence in parts]
        ranked = self.dense.rank(await self._embedder.query(flat), k=k) if flat else []
        rows, start = [], 0
        for parts in split:
            rows.append(interleave(ranked[start : start + len(parts)], k=k))
            start += len(parts)
        return rows


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


class Bm25Baseline:
    """Okapi BM25 over each function's name and description."""

    def __init__(self, functions: Sequence[FunctionDef], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.names = [f.name for f in functions]
        documents = [_words(f"{f.name} {f.description}") for f in functions]
        average = sum(map(len, documents)) / max(1, len(documents))
        frequency = Counter(word for document in documents for word in set(document))
        total = len(documents)
        self._idf = {w: math.log(1 + (total - n + 0.5) / (n + 0.5)) for w, n in frequency.items()}
        self._postings: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for j, document in enumerate(documents):
            norm = k1 * (1 - b + b * len(document) / average)
            for word, count in Counter(document).items():
                self._postings[word].append((j, count * (k1 + 1) / (count + norm)))

    def rank(self, query: str, *, k: int = 10) -> list[str]:
        """The ``k`` best function names for a query (ties by catalog order)."""
        scores: dict[int, float] = defaultdict(float)
        for word in set(_words(query)):
            idf = self._idf.get(word, 0.0)
            for j, weight in self._postings.get(word, ()):
                scores[j] += idf * weight
        best = sorted(scores, key=lambda j: (-scores[j], j))[:k]
        return [self.names[j] for j in best]
