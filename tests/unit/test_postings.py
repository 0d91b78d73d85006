"""BM25 of an in-memory tier: a few rows scored from their own words match every posting walked."""

from __future__ import annotations

import numpy as np

from router.storage.edge_postings import Postings, Words


def rows(seed: int, count: int) -> list[Words | None]:
    rng = np.random.default_rng(seed)
    made: list[Words | None] = []
    for _ in range(count):
        size = int(rng.integers(0, 12))
        if size == 0 and rng.random() < 0.5:
            made.append(None)
            continue
        terms = np.sort(rng.choice(200, size=size, replace=False)).astype(np.int64)
        made.append((terms, rng.uniform(0.1, 3.0, size).astype(np.float32)))
    return made


def test_scores_of_a_few_rows_are_the_same_bits_as_over_every_row() -> None:
    for seed in range(20):
        words = rows(seed, 500)
        postings = Postings(words)
        rng = np.random.default_rng(1000 + seed)
        indices = [int(t) for t in rng.choice(220, size=int(rng.integers(1, 30)), replace=False)]
        values = [float(v) for v in rng.uniform(0.2, 2.0, len(indices))]
        every, holds = postings.scores(indices, values)
        picked = np.sort(rng.choice(500, size=40, replace=False))
        few, few_holds = postings.scores_of([words[r] for r in picked.tolist()], indices, values)
        assert few_holds.tolist() == holds[picked].tolist()
        assert few.tobytes() == every[picked].tobytes()
        assert holds.any()


def test_rows_without_words_or_a_query_no_row_holds_score_nothing() -> None:
    words = rows(3, 50)
    postings = Postings(words)
    scores, holds = postings.scores_of([None, words[1]], [999], [1.0])
    assert scores.tolist() == [0.0, 0.0]
    assert holds.tolist() == [False, False]
    empty = Postings([None, None])
    assert empty.scores_of([None], [1], [1.0])[1].tolist() == [False]
