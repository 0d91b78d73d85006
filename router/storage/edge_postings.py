"""BM25 over the sparse vectors of an in-memory tier, scored as Qdrant scores an IDF-modified sparse vector.

A query term's weight is multiplied by its inverse document frequency,
``ln((N - n + 0.5) / (n + 0.5) + 1)`` with ``N`` the points holding a sparse vector and ``n``
those holding the term, then by each document's value of the term. Only documents holding a
query term are found. The counts are those of the points stored now; the engine's also count
deleted points until its optimizer vacuums their segment, so after deletes its scores can be a
few percent off these.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_FLOAT = np.float32
Words = tuple[np.ndarray, np.ndarray]  # a document's term ids and values


class Postings:
    """Each term's documents (rows) and values, from the rows' sparse vectors at one moment."""

    def __init__(self, rows: Sequence[Words | None]) -> None:
        self.size = len(rows)
        kept = [(row, words) for row, words in enumerate(rows) if words is not None and len(words[0])]
        self._documents = len(kept)
        if not kept:
            self._terms = np.empty(0, dtype=np.int64)
            self._starts = np.zeros(1, dtype=np.intp)
            self._rows = np.empty(0, dtype=np.intp)
            self._values = np.empty(0, dtype=_FLOAT)
            return
        terms = np.concatenate([w[0] for _, w in kept])
        values = np.concatenate([w[1] for _, w in kept])
        rows_of = np.repeat([row for row, _ in kept], [len(w[0]) for _, w in kept])
        order = np.argsort(terms, kind="stable")
        terms, self._values, self._rows = terms[order], values[order], rows_of[order]
        self._rows = self._rows.astype(np.int32)  # half the bytes: rows and term ids fit in 32 bits
        self._terms, first = np.unique(terms, return_index=True)
        self._starts = np.append(first, len(terms))

    def scores(self, indices: Sequence[int], values: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
        """Every row's score for a query, and whether the row holds one of its terms."""
        scores = np.zeros(self.size, dtype=np.float64)
        found = np.zeros(self.size, dtype=bool)
        for _, position, weight in self._held(indices, values):
            start, end = self._starts[position], self._starts[position + 1]
            rows = self._rows[start:end]
            # float64 products whatever numpy's promotion rules: ``scores_of`` sums the same ones.
            scores[rows] += np.multiply(self._values[start:end], weight, dtype=np.float64)
            found[rows] = True
        return scores, found

    def scores_of(
        self, rows: Sequence[Words | None], indices: Sequence[int], values: Sequence[float]
    ) -> tuple[np.ndarray, np.ndarray]:
        """``scores`` for a few rows only, given their words: the same sums, term by term in query order."""
        held = self._held(indices, values)
        scores = np.zeros(len(rows), dtype=np.float64)
        found = np.zeros(len(rows), dtype=bool)
        for i, words in enumerate(rows):
            if words is None or not held:
                continue
            document = dict(zip(words[0].tolist(), words[1].tolist(), strict=True))
            total, holds = 0.0, False
            for term, _, weight in held:
                value = document.get(term)
                if value is not None:
                    total += float(weight * value)
                    holds = True
            scores[i], found[i] = total, holds
        return scores, found

    def _held(self, indices: Sequence[int], values: Sequence[float]) -> list[tuple[int, int, np.float64]]:
        """The query's terms that some row holds, in query order: term, position, weight times IDF."""
        if not len(self._terms) or not len(indices):
            return []
        wanted = np.asarray(indices, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._terms, wanted), len(self._terms) - 1)
        present = self._terms[at] == wanted
        wanted, at = wanted[present], at[present]
        counts = self._starts[at + 1] - self._starts[at]
        idf = np.log((self._documents - counts + 0.5) / (counts + 0.5) + 1.0)
        weights = np.asarray(values, dtype=np.float64)[present] * idf
        return list(zip(wanted.tolist(), at.tolist(), weights, strict=True))
