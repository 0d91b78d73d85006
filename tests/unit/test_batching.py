"""Query micro-batching and caching, with a deterministic encoder."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np
import pytest

from router.embedding.batching import QueryBatcher, Vectors, split


class SlowEncoder:
    """Encodes each text as a one-hot of its length, after a pause, recording its batches."""

    def __init__(self, pause: float = 0.02) -> None:
        self.batches: list[list[str]] = []
        self.alone: list[bool] = []
        self.pause = pause
        self.fail = False
        self.running = self.most_at_once = 0

    async def __call__(self, texts: Sequence[str], alone: bool) -> Vectors:
        self.batches.append(list(texts))
        self.alone.append(alone)
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await asyncio.sleep(self.pause)
        finally:
            self.running -= 1
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
    assert encoder.alone == [True]
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


async def test_a_lone_text_gets_the_machine_even_with_lanes_to_spare() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, lanes=2)
    await batcher.embed(["only one"])
    assert (encoder.batches, encoder.alone) == ([["only one"]], [True])


async def test_queued_texts_split_across_free_lanes_and_share_the_machine() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, lanes=2, cache_size=0)
    texts = ["a" * n for n in range(1, 9)]
    results = await batcher.embed(texts)
    assert encoder.most_at_once == 2
    assert encoder.alone == [False, False]
    assert encoder.batches == [texts[:5], texts[5:]]  # like lengths together, the costlier call as cheap as can be
    assert [int(np.argmax(v)) for v in results] == [len(t) % 8 for t in texts]


async def test_a_call_holding_the_machine_is_not_joined_and_lanes_stay_bounded() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, lanes=2, cache_size=0)
    first = asyncio.create_task(batcher.embed(["first"]))
    await asyncio.sleep(0.005)  # the first call runs alone; these queue behind it
    rest = [asyncio.create_task(batcher.embed([f"later {i}"])) for i in range(30)]
    await asyncio.gather(first, *rest)
    assert encoder.alone[0] is True
    assert encoder.batches[0] == ["first"]
    assert not any(encoder.alone[1:])
    assert len(encoder.batches) >= 3  # the queue went to both lanes
    assert encoder.most_at_once == 2
    assert sorted(t for b in encoder.batches[1:] for t in b) == sorted(f"later {i}" for i in range(30))


async def test_a_lane_that_ends_takes_what_queued_while_the_other_runs() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, lanes=2, cache_size=0)
    pair = asyncio.create_task(batcher.embed(["one", "two"]))  # both lanes, sharing
    await asyncio.sleep(0.005)
    late = asyncio.create_task(batcher.embed(["three"]))
    await asyncio.gather(pair, late)
    assert encoder.batches == [["one"], ["two"], ["three"]]
    assert encoder.alone == [False, False, False]


async def test_a_turn_and_its_short_parts_go_on_two_lanes_as_the_turn_alone_and_the_parts() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, lanes=2, cache_size=0)
    parts = [f"part {i} " + "x" * 20 for i in range(4)]
    whole = " ".join(parts)
    await batcher.embed([whole, *parts])
    assert encoder.batches == [parts, [whole]]


def test_a_split_pads_least_and_keeps_every_text_in_order() -> None:
    texts = [f"q{i}" for i in range(6)] + ["x" * 40]
    assert split(texts, 2) == [texts[:6], texts[6:]]  # halves would pad three texts to 40
    texts = ["a" * n for n in (1, 2, 2, 3, 9, 10, 30)]
    runs = split(texts, 3)
    assert [t for run in runs for t in run] == texts
    assert max(len(run) * len(run[-1]) for run in runs) == 30  # the longest text alone: no cut costs less
    assert split(texts, 1) == [texts]
    cut = [f"{i} " + "x" * 1550 for i in range(10)] + ["y" * 15830]  # all past what the model reads
    assert [len(run) for run in split(cut, 2)] == [10, 1]
    assert sorted(len(run) for run in split(cut, 2, longest=1280)) == [5, 6]
    assert split(["one"], 2) == [["one"]]
    assert split([], 2) == []


def test_a_batcher_needs_a_lane() -> None:
    with pytest.raises(ValueError, match="lanes"):
        QueryBatcher(SlowEncoder(), dimension=8, lanes=0)


async def test_identical_texts_are_encoded_once_and_then_cached() -> None:
    encoder = SlowEncoder()
    batcher = QueryBatcher(encoder, dimension=8, cache_size=10)
    await asyncio.gather(*(batcher.embed(["same"]) for _ in range(5)))
    await batcher.embed(["same"])
    assert encoder.batches == [["same"]]


async def test_the_cache_evicts_the_least_recently_used() -> None:
    encoder = SlowEncoder(pause=0)
    batcher = QueryBatcher(encoder, dimension=8, cache_size=2)
    for text in ["a", "b", "a", "c", "a", "b"]:
        await batcher.embed([text])
    assert [t for b in encoder.batches for t in b] == ["a", "b", "c", "b"]


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
