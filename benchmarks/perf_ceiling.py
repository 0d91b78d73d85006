"""The most concurrency could gain on this model and machine, measured with the bare library.

Each ceiling times ways of encoding the same texts against one text per call at the library's
default intra-op threads. The ways run over the same chunks in an order that rotates from chunk
to chunk, so that load drifting during the measurement weighs on all of them alike.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from router.embedding.selection import cpu_flags, cpu_supports_bf16, cpuinfo

from benchmarks.perf_floor import BareModel

__all__ = ["CONCURRENT_BATCH", "REFERENCE", "Concurrent", "batching_ceiling", "concurrent_ceiling", "parallel_ceiling"]

Way = Callable[[Sequence[str]], None]
# A thread's share of one arrival goes to the library in batches of this many: 4 like-length texts
# pad little, and gained the most of 2, 4 and 8 with 16 BFCL questions arriving at once.
CONCURRENT_BATCH = 4
_ALONE = " one by one"
# The way every concurrent gain is measured against.
REFERENCE = f"fp32{_ALONE}"


def batching_ceiling(bare: BareModel, texts: Sequence[str], *, batch: int) -> float:
    """How much faster the bare library encodes in batches of ``batch`` (as they come) than one text at a time.

    The most micro-batching can gain on this model and machine without sorting by length.
    """

    def together(chunk: Sequence[str]) -> None:
        bare.encode(chunk)

    chunks = [texts[start : start + batch] for start in range(0, len(texts) - batch + 1, batch)]
    return _gains({"together": together}, chunks, _one_by_one(bare))["together"]


def parallel_ceiling(bare: BareModel, texts: Sequence[str], *, workers: int) -> float:
    """How much faster ``workers`` threads encode one text at a time, each with one intra-op thread,
    than one thread with the library's default intra-op threads.

    What serving concurrent requests on separate model threads could gain over one model thread.
    """
    one_by_one = _one_by_one(bare)

    def parallel(chunk: Sequence[str]) -> None:
        _in_threads(one_by_one, [chunk[i::workers] for i in range(workers)])

    half = len(texts) // 2
    return _gains({"parallel": parallel}, [texts[:half], texts[half:]], one_by_one)["parallel"]


@dataclass(frozen=True)
class Concurrent:
    """How much faster texts arriving together encode than one at a time, each way at its fastest.

    Attributes:
        gain: the fastest way together against the fastest one at a time.
        together: that way together (``<precision> in <n> threads``).
        alone: the precision of the fastest one at a time.
        ways: every way's gain over one text per call in fp32 (``bf16 one by one`` among them).
    """

    gain: float
    together: str
    alone: str
    ways: dict[str, float]


def concurrent_ceiling(bare: BareModel, texts: Sequence[str], *, clients: int, workers: int) -> Concurrent:
    """How much faster the bare library encodes texts arriving ``clients`` at a time than one by one, at best.

    Together: each arrival sorted by length, in batches of ``CONCURRENT_BATCH``, either dealt among
    ``workers`` threads of one intra-op thread each or on one thread of the default intra-op
    threads. One at a time: one text per call at the default intra-op threads. Each in fp32 and,
    where the CPU computes bf16, under bf16 autocast; the fastest of each side is kept. What
    ``clients`` concurrent routes could gain over sequential ones if a route cost nothing beside
    its encode, on this model and machine.
    """
    precisions = ["fp32", "bf16"] if cpu_supports_bf16(cpu_flags(cpuinfo())) else ["fp32"]
    ways: dict[str, Way] = {}
    for precision in precisions:
        if precision != "fp32":
            ways[f"{precision}{_ALONE}"] = _under(precision, _one_by_one(bare))
        ways[f"{precision} in {workers} threads"] = _dealt(bare, precision, workers)
        ways[f"{precision} in 1 thread"] = _under(precision, _batched(bare))
    chunks = [texts[start : start + clients] for start in range(0, len(texts) - clients + 1, clients)]
    gains = {REFERENCE: 1.0, **_gains(ways, chunks, _one_by_one(bare))}
    alone = max((name for name in gains if name.endswith(_ALONE)), key=gains.__getitem__)
    together = max((name for name in gains if not name.endswith(_ALONE)), key=gains.__getitem__)
    return Concurrent(gains[together] / gains[alone], together, alone.removesuffix(_ALONE), gains)


def _dealt(bare: BareModel, precision: str, workers: int) -> Way:
    """Each chunk sorted by length and dealt among ``workers`` threads, each batching its share."""
    batched = _under(precision, _batched(bare))

    def way(chunk: Sequence[str]) -> None:
        ordered = sorted(chunk, key=len)
        _in_threads(batched, [ordered[i::workers] for i in range(workers)])

    return way


def _batched(bare: BareModel) -> Way:
    def way(chunk: Sequence[str]) -> None:
        bare.encode(sorted(chunk, key=len), batch_size=CONCURRENT_BATCH)

    return way


def _under(precision: str, way: Way) -> Way:
    """``way`` under bf16 autocast for ``bf16`` (autocast is per thread: set where the encoding runs)."""
    if precision == "fp32":
        return way

    def autocast(chunk: Sequence[str]) -> None:
        import torch

        with torch.autocast("cpu", dtype=torch.bfloat16):
            way(chunk)

    return autocast


def _one_by_one(bare: BareModel) -> Way:
    def way(chunk: Sequence[str]) -> None:
        for text in chunk:
            bare.encode([text])

    return way


def _in_threads(way: Way, parts: Sequence[Sequence[str]]) -> None:
    """``way`` over each of ``parts`` at once, one thread each, one intra-op thread per thread."""
    with _intra_op(1):
        threads = [threading.Thread(target=way, args=(part,)) for part in parts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


@contextlib.contextmanager
def _intra_op(threads: int) -> Iterator[None]:
    import torch

    default = torch.get_num_threads()
    torch.set_num_threads(threads)  # threads started meanwhile take the count too
    try:
        yield
    finally:
        torch.set_num_threads(default)


def _gains(ways: dict[str, Way], chunks: Sequence[Sequence[str]], reference: Way) -> dict[str, float]:
    """Each way's seconds over ``chunks`` against ``reference``'s: how many times faster it is."""
    every = {"": reference, **ways}
    names = list(every)
    seconds = dict.fromkeys(names, 0.0)
    for i, chunk in enumerate(chunks):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            began = time.perf_counter()
            every[name](chunk)
            seconds[name] += time.perf_counter() - began
    return {name: seconds[""] / seconds[name] if seconds[name] else 0.0 for name in ways}
