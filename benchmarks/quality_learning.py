"""The floor for usage learning, and how bounding the examples costs, in plain numpy.

- ``nearest_example``: the plain nearest-example ranking: a function scores
  ``max(cosine to its "name: description", 0.9 x cosine to its closest stored request)``.
- ``keep``: which stored requests a bounded store keeps per function, by two rules: the
  latest ``cap`` (what the router did before) or the router's own (``router.retrieval.examples``:
  near-duplicates merge, and at the cap a new request replaces the kept one nearest to it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from benchmarks.bfcl import BfclQuestion
from router.retrieval.examples import MERGE_SIMILARITY

EXAMPLE_WEIGHT = 0.9
Matrix = npt.NDArray[np.float32]


def nearest_example(
    names: Sequence[str],
    functions: Matrix,
    queries: Matrix,
    examples: Sequence[tuple[str, int]],
    stored: Matrix,
    *,
    k: int = 10,
) -> list[list[str]]:
    """The ``k`` best names per query by ``max(cosine, 0.9 x closest example)``.

    Args:
        names: the catalog's names, in the rows' order of ``functions``.
        functions: the ``name: description`` embeddings.
        queries: the requests to rank.
        examples: (function name, row of ``stored``) per stored request and function it called.
        stored: the stored requests' embeddings.
    """
    scores = queries @ functions.T
    if examples:
        column = {name: j for j, name in enumerate(names)}
        similar = queries @ stored.T
        by_function: dict[int, list[int]] = {}
        for name, row in examples:
            if name in column:
                by_function.setdefault(column[name], []).append(row)
        for j, rows in by_function.items():
            scores[:, j] = np.maximum(scores[:, j], EXAMPLE_WEIGHT * similar[:, rows].max(axis=1))
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return [[names[j] for j in row] for row in top]


def keep(train: Sequence[BfclQuestion], vectors: Matrix, *, cap: int | None, rule: str) -> list[tuple[str, int]]:
    """The (function, row) examples a store bounded to ``cap`` per function keeps after ``train``, in order.

    ``rule`` is ``latest`` (the ``cap`` most recent) or ``merge`` (the router's).
    """
    kept: dict[str, list[int]] = {}
    for row, question in enumerate(train):
        for name in question.expected:
            rows = kept.setdefault(name, [])
            if rule == "latest":
                rows.append(row)
                if cap is not None and len(rows) > cap:
                    rows.pop(0)
                continue
            if rows:
                similar = vectors[rows] @ vectors[row]
                nearest = int(np.argmax(similar))
                if similar[nearest] >= MERGE_SIMILARITY:
                    continue
                if cap is not None and len(rows) >= cap:
                    rows.pop(nearest)
            rows.append(row)
    return [(name, row) for name, rows in kept.items() for row in rows]
