"""The heap's trims: freed pages go back to the OS, and after a burst of traffic once it is quiet."""

from __future__ import annotations

import asyncio
import ctypes.util
import subprocess
import sys

import pytest

from router import heap

QUIET, EVERY = 0.6, 0.05  # quiet six times the steady test's gap: a loaded machine's late wake-ups fit


async def trims_during(monkeypatch: pytest.MonkeyPatch, turns: list[int], script: list[tuple[float, int]]) -> list[int]:
    """Run the trimmer while ``script`` sets the turn count (after each delay); the counts it trimmed at."""
    trimmed: list[int] = []
    monkeypatch.setattr(heap, "release", lambda: trimmed.append(turns[0]) is None)
    task = asyncio.create_task(heap.trim_when_quiet(lambda: turns[0], quiet=QUIET, every=EVERY))
    try:
        for delay, count in script:
            await asyncio.sleep(delay)
            turns[0] = count
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return trimmed


async def test_no_trim_without_traffic(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await trims_during(monkeypatch, [5], [(QUIET * 4, 5)]) == []


async def test_one_trim_once_a_burst_has_been_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    burst = [(0.02, n) for n in range(1, 11)]
    trimmed = await trims_during(monkeypatch, [0], [*burst, (QUIET * 4, 10)])
    assert trimmed == [10]


async def test_no_trim_while_traffic_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    steady = [(EVERY * 2, n) for n in range(1, 16)]  # a turn every 0.1 s for 1.5 s, never quiet for 0.6 s
    trimmed = await trims_during(monkeypatch, [0], steady)
    assert trimmed == []


async def test_each_burst_gets_its_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    trimmed = await trims_during(monkeypatch, [0], [(0.05, 3), (QUIET * 3, 3), (0.05, 7), (QUIET * 3, 7)])
    assert trimmed == [3, 7]


# Freed 4 KB blocks in the middle of a thread's arena, a live one after them: no automatic trim reaches them.
FRAGMENTED = """
import threading
from router import heap

def rss_anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) // 1024

def work(out):
    blocks = [bytes(4096) + bytes([i % 251]) for i in range(60_000)]
    keep = blocks[-1]
    del blocks
    out.append(rss_anon())
    heap.release()
    out.append(rss_anon())
    out.append(len(keep))

out = []
thread = threading.Thread(target=work, args=(out,))
thread.start()
thread.join()
print(out[0], out[1])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or ctypes.util.find_library("c") is None, reason="glibc")
def test_release_returns_a_threads_freed_pages() -> None:
    done = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, check=True, timeout=60)
    before, after = (int(x) for x in done.stdout.split())
    assert before - after >= 100  # MB: 60,000 freed blocks of 4 KB (240 MB) were held until the trim


# A catalog-like parse inside ``bulk`` and a cycle another thread drops meanwhile.
FROZEN = """
import gc, weakref
from router import heap

class Node:
    pass

with heap.bulk():
    assert not gc.isenabled()
    catalog = [{"name": f"f{i}", "parameters": {"properties": {}}} for i in range(10_000)]
    cycle = Node()
    cycle.me = cycle
    dropped = weakref.ref(cycle)
    del cycle
assert gc.isenabled()
frozen = gc.get_freeze_count()
walked = gc.collect()
print(frozen >= 20_000, dropped() is not None)  # the parse out of the passes; the cycle kept, for now
heap.release()
print(dropped() is None, gc.get_freeze_count() >= 20_000, len(catalog))  # collected; what lives frozen again
"""


def test_what_a_bulk_built_leaves_the_collector_until_release_collects_its_garbage() -> None:
    done = subprocess.run([sys.executable, "-c", FROZEN], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["True", "True", "True", "True", "10000"]


# A bulk that ends without anybody calling ``release`` (a refused body): its thaw comes by itself.
THAWED = """
import gc, time, weakref
from router import heap

class Node:
    pass

heap.THAW_AFTER = 0.2
with heap.bulk():
    parsed = [{"name": f"f{i}", "parameters": {}} for i in range(heap.FREEZE_AT)]
    cycle = Node()
    cycle.me = cycle
    dropped = weakref.ref(cycle)
    del cycle
gc.collect()
print(dropped() is not None)
time.sleep(1.0)
print(dropped() is None)
"""


def test_a_bulk_is_thawed_after_a_while_without_a_release() -> None:
    done = subprocess.run([sys.executable, "-c", THAWED], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["True", "True"]


# Bulk work that leaves few new containers alive (a body nearly all written before): nothing frozen, no thaw.
SMALL = """
import gc, threading, weakref
from router import heap

class Node:
    pass

gc.collect()
gc.freeze()
before = gc.get_freeze_count()
with heap.bulk():
    scratch = [{"name": f"f{i}", "parameters": {}} for i in range(heap.FREEZE_AT)]
    del scratch  # freed inside: not left alive
    kept = [{"name": f"f{i}"} for i in range(100)]
    cycle = Node()
    cycle.me = cycle
    dropped = weakref.ref(cycle)
    del cycle
timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
print(gc.isenabled(), gc.get_freeze_count() == before, not timers)
gc.collect()
print(dropped() is None)
with heap.bulk():
    parsed = [{"name": f"f{i}", "parameters": {}} for i in range(heap.FREEZE_AT)]
print(gc.get_freeze_count() >= before + heap.FREEZE_AT)
"""


def test_a_bulk_that_leaves_little_alive_freezes_nothing() -> None:
    done = subprocess.run([sys.executable, "-c", SMALL], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.split() == ["True", "True", "True", "True", "True"]
