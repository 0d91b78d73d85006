"""The bare-library ceilings of the performance benchmark: what each way encodes, and how gains are timed."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
import torch

from benchmarks import perf_ceiling
from benchmarks.perf_ceiling import CONCURRENT_BATCH, batching_ceiling, concurrent_ceiling, parallel_ceiling


class Clock:
    """A clock that moves only when the fake model encodes."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeBare:
    """Records each encode call (texts, batch size, intra-op threads, bf16 autocast) and advances the clock:
    a call costs ``per_call`` plus ``per_text`` for each text."""

    def __init__(self, clock: Clock, *, per_call: float, per_text: float) -> None:
        self.clock, self.per_call, self.per_text = clock, per_call, per_text
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None) -> None:
        with self._lock:
            self.calls.append(
                {
                    "texts": list(texts),
                    "batch_size": batch_size,
                    "threads": torch.get_num_threads(),
                    "bf16": torch.is_autocast_enabled("cpu"),
                }
            )
            self.clock.now += self.per_call + self.per_text * len(texts)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(perf_ceiling.time, "perf_counter", fake)
    default = torch.get_num_threads()
    torch.set_num_threads(2)  # the reference's threads, told apart from the ways' one
    yield fake
    torch.set_num_threads(default)


def test_a_batch_that_saves_the_per_call_cost_shows_its_gain(clock: Clock) -> None:
    bare = FakeBare(clock, per_call=3.0, per_text=1.0)
    texts = [f"text {i}" for i in range(32)]
    # One by one: 4 s a text. In batches of 4: 3 + 4 = 7 s for 4 texts.
    assert batching_ceiling(bare, texts, batch=4) == pytest.approx(16 / 7)


def test_the_concurrent_ceiling_deals_each_sorted_arrival_to_threads_of_one_intra_op_thread(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perf_ceiling, "cpu_supports_bf16", lambda _flags: True)
    bare = FakeBare(clock, per_call=0.0, per_text=1.0)
    texts = [f"{i:02d}" + "x" * (i * 7 % 16) for i in range(32)]

    concurrent_ceiling(bare, texts, clients=16, workers=2)

    assert torch.get_num_threads() == 2
    dealt = [c for c in bare.calls if c["batch_size"] == CONCURRENT_BATCH and c["threads"] == 1]
    assert sum(c["bf16"] for c in dealt) == len(dealt) // 2  # the same ways in fp32 and in bf16
    for arrival in (texts[:16], texts[16:]):
        ordered = sorted(arrival, key=len)
        for bf16 in (False, True):
            parts = sorted(c["texts"] for c in dealt if c["bf16"] is bf16 and set(c["texts"]) <= set(arrival))
            assert parts == sorted([ordered[0::2], ordered[1::2]])
    one_thread = [c for c in bare.calls if c["batch_size"] == CONCURRENT_BATCH and c["threads"] == 2]
    assert sorted(tuple(c["texts"]) for c in one_thread) == sorted(
        tuple(sorted(a, key=len)) for a in (texts[:16], texts[16:]) for _ in range(2)
    )
    alone = [c for c in bare.calls if c["batch_size"] is None]
    assert {c["threads"] for c in alone} == {2}
    for bf16 in (False, True):  # one text per call, in each precision
        assert [c["texts"] for c in alone if c["bf16"] is bf16] == [[t] for t in texts]


def test_the_concurrent_gain_is_the_fastest_together_over_the_fastest_alone(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(perf_ceiling, "cpu_supports_bf16", lambda _flags: True)

    class Bf16Halves(FakeBare):
        """bf16 halves a call's cost; a call also costs 3 s, which batches of 4 share."""

        def encode(self, texts: Sequence[str], *, batch_size: int | None = None) -> None:
            before = self.clock.now
            super().encode(texts, batch_size=batch_size)
            calls = -(-len(texts) // (batch_size or 1))
            cost = calls * 3.0 + len(texts)
            self.clock.now = before + (cost / 2 if torch.is_autocast_enabled("cpu") else cost)

    found = concurrent_ceiling(
        Bf16Halves(clock, per_call=0, per_text=0), [f"t{i}" for i in range(32)], clients=16, workers=2
    )

    # Alone: 4 s a text in fp32, 2 s in bf16. Together in bf16 on one thread: (3 + 4) / 2 = 3.5 s per 4 texts.
    # Two threads share one clock here, so they gain nothing over one.
    assert found.alone == "bf16"
    assert found.ways["bf16 one by one"] == pytest.approx(2.0)
    assert found.together.startswith("bf16")
    assert found.gain == pytest.approx(2.0 / (3.5 / 4))


def test_no_bf16_way_where_the_cpu_has_none(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perf_ceiling, "cpu_supports_bf16", lambda _flags: False)
    bare = FakeBare(clock, per_call=1.0, per_text=1.0)
    found = concurrent_ceiling(bare, [f"t{i}" for i in range(16)], clients=16, workers=2)
    assert (found.alone, found.together.split()[0]) == ("fp32", "fp32")
    assert not any(c["bf16"] for c in bare.calls)


def test_parallel_threads_run_one_text_a_call_on_one_intra_op_thread(clock: Clock) -> None:
    bare = FakeBare(clock, per_call=0.0, per_text=1.0)
    texts = [f"t{i}" for i in range(8)]
    assert parallel_ceiling(bare, texts, workers=2) == pytest.approx(1.0)
    for threads in (1, 2):
        assert sorted(t for c in bare.calls if c["threads"] == threads for t in c["texts"]) == texts
