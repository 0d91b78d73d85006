"""Query micro-batching and caching, with a deterministic encoder."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from router.embedding.batching import QueryBatcher, QueryRuns, Vectors


class SlowEncoder:
    """Encodes each text as a one-hot of its length, after a pause, recording its batches."""

    def __init__(self, pause: float = 0.02) -> None:
        self.batches: list[list[str]] = []
        self.pause = pause
        self.fail = False

    async def __call__(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        await asyncio.sleep(self.pause)
        if self.fail:
            raise RuntimeError("model crashed")
        vectors = np.zeros((len(texts), 8), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, len(text) % 8] = 1.0
        return vectors


async def test_a_lone_request_is_encoded_at_once_and_alone() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8)
    vectors = await batcher.embed(["abc", "abcd"])
    assert encoder.batches == [["abc", "abcd"]]
    assert vectors.shape == (2, 8)
    assert vectors[0, 3] == 1.0
    assert vectors[1, 4] == 1.0


async def test_concurrent_requests_share_model_calls() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, cache_size=0)
    texts = [f"query number {i}" for i in range(40)]
    results = await asyncio.gather(*(batcher.embed([t]) for t in texts))
    assert len(encoder.batches) <= 3, encoder.batches
    assert sorted(t for b in encoder.batches for t in b) == sorted(texts)
    for text, vectors in zip(texts, results, strict=True):
        assert vectors[0, len(text) % 8] == 1.0


async def test_identical_texts_are_encoded_once_and_then_cached() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, cache_size=10)
    await asyncio.gather(*(batcher.embed(["same"]) for _ in range(5)))
    await batcher.embed(["same"])
    assert encoder.batches == [["same"]]
    assert batcher.cache_hits == 1


async def test_the_cache_evicts_the_least_recently_used() -> None:
    encoder = SlowEncoder(pause=0)
    batcher = QueryBatcher(encoder, dimension=8, cache_size=2)
    for text in ["a", "b", "a", "c", "a", "b"]:
        await batcher.embed([text])
    assert [t for b in encoder.batches for t in b] == ["a", "b", "c", "b"]


async def test_batches_are_bounded() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, max_batch=4, cache_size=0)
    await asyncio.gather(*(batcher.embed([f"t{i}"]) for i in range(10)))
    assert max(len(b) for b in encoder.batches) <= 4


async def test_a_model_error_reaches_every_waiter_and_the_next_call_works() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8)
    encoder.fail = True
    results = await asyncio.gather(*(batcher.embed([f"x{i}"]) for i in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    encoder.fail = False
    assert (await batcher.embed(["x0"])).shape == (1, 8)


async def test_a_cancelled_caller_does_not_cancel_others_waiting_for_the_same_text() -> None:
    encoder = SlowEncoder(pause=0.05)
    batcher = QueryBatcher(encoder, dimension=8)
    first = asyncio.create_task(batcher.embed(["shared"]))
    second = asyncio.create_task(batcher.embed(["shared"]))
    await asyncio.sleep(0.01)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert (await second).shape == (1, 8)


async def test_no_texts_give_an_empty_matrix() -> None:
    batcher = QueryBatcher(SlowEncoder(), dimension=8)
    assert (await batcher.embed([])).shape == (0, 8)


class Runs:
    """Fake single and batch backends recording what each was given; a text's vector is a one-hot of its length."""

    def __init__(self) -> None:
        self.single: list[list[str]] = []
        self.batch: list[list[str]] = []

    def encode(self, texts: list[str]) -> Vectors:
        vectors = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, len(text) % 64] = 1.0
        return vectors

    def run_single(self, texts: list[str]) -> Vectors:
        self.single.append(texts)
        return self.encode(texts)

    def run_batch(self, texts: list[str]) -> Vectors:
        self.batch.append(texts)
        return self.encode(texts)


def test_a_lone_query_runs_on_the_single_query_backend() -> None:
    runs = Runs()
    encode = QueryRuns(runs.run_single, runs.run_batch, dimension=64)
    assert encode(["hello"])[0, 5] == 1.0
    assert (runs.single, runs.batch) == ([["hello"]], [])


def test_queries_of_like_length_batch_together_and_an_outlier_runs_alone() -> None:
    runs = Runs()
    encode = QueryRuns(runs.run_single, runs.run_batch, dimension=64)
    texts = ["a" * 20, "b" * 50, "c" * 21, "d" * 19, "e" * 22]
    vectors = encode(texts)
    assert [int(np.argmax(v)) for v in vectors] == [20, 50, 21, 19, 22]  # the callers' order
    assert runs.batch == [["d" * 19, "a" * 20, "c" * 21, "e" * 22]]
    assert runs.single == [["b" * 50]]


def test_query_groups_are_bounded() -> None:
    runs = Runs()
    encode = QueryRuns(runs.run_single, runs.run_batch, dimension=64, max_batch=4, lengths=lambda ts: [5] * len(ts))
    encode([f"q{i}" for i in range(9)])
    assert [len(b) for b in runs.batch] == [4, 4]
    assert [len(s) for s in runs.single] == [1]
