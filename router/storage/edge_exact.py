"""Exact search in memory for an embedded collection below its index threshold.

Below the threshold Qdrant Edge scans a plain segment point by point: 3-4 ms for 10,000
vectors under a namespace filter on a 2-core CPU, where one matrix-vector product over the same
vectors takes about 1 ms. A collection whose spec names ``resident_fields`` keeps its unit
vectors, its sparse vectors and those payload fields here, written in the same step as the
shard (under its write guard), and answers the dense and sparse searches that filter on and
return only those fields, with the engine's scores. Anything else (a fusion, other fields, a
filter on another field) goes to the engine.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import qdrant_edge as qe

from router.storage.base import DENSE, SPARSE, CollectionSpec, Hit, Match, PointData, SparseVector
from router.storage.edge_postings import Postings, Words
from router.storage.edge_shard import LiveShard

_FLOAT = np.float32
_MIN_ROWS = 1024
_PAGE = 2048
# Up to this many rows, a filtered BM25 search scores each row's own words (a few microseconds a
# row) rather than walking every posting of the query's terms (0.3-0.5 ms at 10,000 rows).
_FEW_ROWS = 64
_NONE = np.empty(0, dtype=np.intp)


class ExactTier:
    """The unit dense vectors, sparse vectors and ``fields`` of every point of one collection, row by row.

    Args:
        dimension: the dense vectors' size.
        fields: the payload fields kept for each point.
        capacity: the most points kept; past it ``full`` is set and the tier is to be dropped.
        sparse: whether the collection's points have sparse vectors (kept, and searched).
        rows: the points expected, to size the matrix once.
    """

    def __init__(
        self, dimension: int, fields: Sequence[str], *, capacity: int, sparse: bool = False, rows: int = 0
    ) -> None:
        self._fields = tuple(fields)
        self._capacity = capacity
        self._matrix = np.empty((max(_MIN_ROWS, rows + rows // 8), dimension), dtype=_FLOAT)
        self._ids: list[str] = []
        self._rows: dict[str, int] = {}
        self._payloads: list[dict[str, Any]] = []
        self._sparse = sparse
        self._words: list[Words | None] = []
        # field -> value -> rows, and each term's rows: built on the first search after a write.
        self._index: dict[str, dict[Any, np.ndarray]] | None = None
        self._postings: Postings | None = None
        self._lock = threading.Lock()
        self.full = False

    def __len__(self) -> int:
        return len(self._ids)

    def answers(self, match: Match | None, fields: Sequence[str] | None, *, sparse: bool = False) -> bool:
        """Whether a dense (or ``sparse``) search with this filter and these returned fields can be answered here."""
        if self.full or fields is None or (sparse and not self._sparse):
            return False
        return set(fields) <= set(self._fields) and (not match or set(match) <= set(self._fields))

    def upsert(self, points: Iterable[PointData], stored: Mapping[str, Sequence[float]]) -> None:
        """Insert or replace points by id, with the unit vectors the shard ``stored`` for them.

        The shard's own vectors, not ``points``' normalised here: a tier read back from the shard
        then holds the same bits as the one written, and a route scores the same after a restart.
        A point without a dense vector is no longer kept.
        """
        with self._lock:
            for point in points:
                if point.dense is None:
                    self._remove(point.id)
                    continue
                dense = stored.get(point.id)
                vector = np.asarray(point.dense if dense is None else dense, dtype=_FLOAT)
                if dense is None:  # not read back under this id: normalised here
                    norm = float(np.linalg.norm(vector))
                    vector = vector / norm if norm else vector
                row = self._rows.get(point.id)
                if row is None:
                    if len(self._ids) >= self._capacity:
                        self.full = True
                        break
                    row = self._append(point.id)
                self._matrix[row] = vector
                self._payloads[row] = {f: point.payload[f] for f in self._fields if f in point.payload}
                self._words[row] = _words(point.sparse) if self._sparse else None
            self._changed()

    def extend(
        self,
        ids: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[Mapping[str, Any]],
        sparse: Sequence[SparseVector | None],
    ) -> None:
        """Add points not kept yet (``ids`` new and distinct), their stored unit vectors as the rows of one matrix."""
        with self._lock:
            start, end = len(self._ids), len(self._ids) + len(ids)
            if end > self._capacity:
                self.full = True
                return
            if end > len(self._matrix):
                self._grow(end)
            self._matrix[start:end] = vectors
            self._ids.extend(ids)
            self._rows.update(zip(ids, range(start, end), strict=True))
            self._payloads.extend({f: p[f] for f in self._fields if f in p} for p in payloads)
            self._words.extend(_words(v) if self._sparse else None for v in sparse)
            self._changed()

    def delete(self, ids: Iterable[str]) -> None:
        """Delete points by id; unknown ids are ignored."""
        with self._lock:
            for point_id in ids:
                self._remove(point_id)
            self._changed()

    def delete_where(self, match: Match) -> None:
        """Delete every point whose kept fields match."""
        with self._lock:
            doomed = [self._ids[row] for row in self._matching(match).tolist()]
            for point_id in doomed:
                self._remove(point_id)
            self._changed()

    def search(self, dense: Sequence[float], match: Match | None, limit: int, fields: Sequence[str]) -> list[Hit]:
        """The ``limit`` points nearest ``dense`` by cosine among those matching, nearest first."""
        if limit <= 0:
            return []
        query = np.asarray(dense, dtype=_FLOAT)
        norm = float(np.linalg.norm(query))
        if norm:
            query = query / norm
        with self._lock:
            size = len(self._ids)
            picked = np.arange(size) if not match else self._matching(match)
            # einsum, not BLAS: a row's score must not depend on where it sits or how many rows are
            # asked (BLAS rounds the rows of a block's tail otherwise), so a route scores the
            # same whichever order the rows were written or read back in. It is as fast here.
            if len(picked) * 8 > size:
                # One product over every row beats copying most of them out first.
                scores = np.einsum("ij,j->i", self._matrix[:size], query)
                if len(picked) < size:
                    scores = scores[picked]
            else:
                scores = np.einsum("ij,j->i", self._matrix[picked], query)
            return self._best(scores, picked, limit, fields)

    def search_words(self, sparse: SparseVector, match: Match | None, limit: int, fields: Sequence[str]) -> list[Hit]:
        """The ``limit`` matching points holding a term of ``sparse``, best BM25 score first."""
        if limit <= 0 or not sparse.indices:
            return []
        with self._lock:
            postings = self._postings
            if postings is None:
                postings = self._postings = Postings(self._words)
            if match:
                picked = self._matching(match)
                if len(picked) <= _FEW_ROWS:  # a list of names: their own words, not every posting
                    scores, holds = postings.scores_of(
                        [self._words[r] for r in picked.tolist()], sparse.indices, sparse.values
                    )
                else:
                    every, held = postings.scores(sparse.indices, sparse.values)
                    scores, holds = every[picked], held[picked]
                return self._best(scores[holds], picked[holds], limit, fields)
            every, held = postings.scores(sparse.indices, sparse.values)
            picked = np.flatnonzero(held)
            return self._best(every[picked], picked, limit, fields)

    def _best(self, scores: np.ndarray, picked: np.ndarray, limit: int, fields: Sequence[str]) -> list[Hit]:
        """Hits of the ``limit`` best ``scores`` (of the rows ``picked``), best first."""
        best = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
        best = best[np.argsort(-scores[best], kind="stable")]
        return [
            Hit(
                id=self._ids[row],
                score=float(scores[i]),
                payload={f: v for f, v in self._payloads[row].items() if f in fields},
            )
            for i, row in zip(best.tolist(), picked[best].tolist(), strict=True)
        ]

    def _changed(self) -> None:
        self._index = None
        self._postings = None

    def _append(self, point_id: str) -> int:
        row = len(self._ids)
        if row == len(self._matrix):
            self._grow(row + 1)
        self._ids.append(point_id)
        self._payloads.append({})
        self._words.append(None)
        self._rows[point_id] = row
        return row

    def _grow(self, rows: int) -> None:
        size = len(self._ids)
        grown = np.empty((max(rows, size + size // 2), self._matrix.shape[1]), dtype=_FLOAT)
        grown[:size] = self._matrix[:size]
        self._matrix = grown

    def _remove(self, point_id: str) -> None:
        # The last row moves into the hole: rows stay dense, so a search is one product.
        row = self._rows.pop(point_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._payloads[row] = self._payloads[last]
            self._words[row] = self._words[last]
            self._rows[moved] = row
        self._ids.pop()
        self._payloads.pop()
        self._words.pop()

    def _matching(self, match: Match) -> np.ndarray:
        """The rows (ascending) whose kept fields match every condition (a list matches any of its items)."""
        index = self._index
        if index is None:
            index = self._index = self._build_index()
        conditions = []
        for key, wanted in match.items():
            by_value = index.get(key, {})
            if isinstance(wanted, str | int | bool):
                conditions.append(by_value.get(wanted, _NONE))
            else:
                parts = [by_value[v] for v in set(wanted) if v in by_value]
                conditions.append(np.sort(np.concatenate(parts)) if parts else _NONE)
        conditions.sort(key=len)
        found = conditions[0]
        for rows in conditions[1:]:
            if not len(found):
                break
            # Few rows left (a list of names): each looked up in the larger one by bisection.
            at = np.searchsorted(rows, found)
            found = found[(at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == found)]
        return found

    def _build_index(self) -> dict[str, dict[Any, np.ndarray]]:
        lists: dict[str, dict[Any, list[int]]] = {f: {} for f in self._fields}
        for row, payload in enumerate(self._payloads):
            for key, value in payload.items():
                if isinstance(value, str | int | bool):
                    lists[key].setdefault(value, []).append(row)
        return {f: {v: np.asarray(r, dtype=np.intp) for v, r in rows.items()} for f, rows in lists.items()}


def load(spec: CollectionSpec, live: LiveShard, *, capacity: int) -> ExactTier | None:
    """The tier of an opened collection, or None when its spec keeps none or it holds more than ``capacity`` points."""
    if spec.dense_size is None or not spec.resident_fields or live.indexed:
        return None
    with live.reading() as shard:
        points = int(shard.count(qe.CountRequest(exact=True)))
    if points > capacity:
        return None
    tier = ExactTier(spec.dense_size, spec.resident_fields, capacity=capacity, sparse=spec.sparse, rows=points)
    selector = qe.PayloadSelector.Include(list(spec.resident_fields))
    named = [DENSE, SPARSE] if spec.sparse else [DENSE]
    offset: Any = None
    while True:
        request = qe.ScrollRequest(offset=offset, limit=_PAGE, with_payload=selector, with_vector=named)
        with live.reading() as shard:
            page, offset = shard.scroll(request)
        kept = [(r, dense) for r in page if (dense := stored_dense(r.vector)) is not None]
        if kept:
            vectors = np.asarray([dense for _, dense in kept], dtype=_FLOAT)
            ids, payloads = [str(r.id) for r, _ in kept], [dict(r.payload or {}) for r, _ in kept]
            tier.extend(ids, vectors, payloads, [_sparse(r.vector) for r, _ in kept])
        if offset is None:
            break
    return None if tier.full else tier


def stored_dense(vectors: Any) -> Sequence[float] | None:
    """A stored point's dense vector: named vectors come back as a dict (None without the dense one)."""
    found = vectors.get(DENSE) if isinstance(vectors, dict) else None
    return found if isinstance(found, list) else None


def _sparse(vectors: Any) -> SparseVector | None:
    found = vectors.get(SPARSE) if isinstance(vectors, dict) else None
    return None if found is None else SparseVector(indices=list(found.indices), values=list(found.values))


def _words(vector: SparseVector | None) -> Words | None:
    if vector is None or not vector.indices:
        return None
    return np.asarray(vector.indices, dtype=np.int64), np.asarray(vector.values, dtype=np.float32)
