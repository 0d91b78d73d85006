"""The heap: freed memory given back to the operating system, and the cycle collector kept off bulk work.

Parsing a large catalog (a 100k-function ``PUT`` is about 60 MB of JSON, several times
that as Python objects) leaves its freed objects with the C allocator, which keeps the
pages for reuse: without a trim the process stays hundreds of MB larger long after the
catalog is stored. glibc's ``malloc_trim`` returns the free pages of every arena; on
other C libraries this does nothing.

Python's cycle collector runs its full passes in proportion to the objects allocated, and
each pass walks every live container object: decoding and validating a 100k-function catalog
(millions of dicts and lists, none of them in a cycle) spent most of its time in those
passes, three quarters of an ``orjson.loads`` of the 60 MB body. ``bulk()`` pauses the
collector for such work and moves its result out of the passes until ``release()``;
``settle()`` moves what a started process holds (model, libraries) out of them for good.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from time import monotonic
from typing import Any

__all__ = ["bulk", "release", "release_soon", "settle", "trim_when_quiet"]


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.mallopt.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def release() -> bool:
    """Collect what a finished ``bulk`` froze and return free pages to the OS; whether the C library could (glibc)."""
    _thaw()
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


# Weak: a loop closed before its release ran is not kept alive by it.
_scheduled: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


def release_soon(delay: float = 1.0) -> None:
    """Release after ``delay`` seconds, off the event loop: once the request that parsed a catalog has ended.

    Calls while one is pending join it. Must be called from the event loop.
    """
    loop = asyncio.get_running_loop()
    if loop in _scheduled:
        return
    _scheduled.add(loop)

    def run() -> None:
        _scheduled.discard(loop)
        loop.run_in_executor(None, release)

    loop.call_later(delay, run)


async def trim_when_quiet(activity: Callable[[], object], *, quiet: float = 2.0, every: float = 0.5) -> None:
    """Release once traffic stops: when ``activity()`` changed and then stayed the same for ``quiet`` seconds.

    Runs until cancelled. Requests free what they allocated but the allocator keeps the pages: after
    64 concurrent clients at 100k functions the process held 64 MB it no longer used. The trim waits
    for a quiet moment because ``malloc_trim`` holds each arena's lock while it walks it.
    """
    last = activity()
    changed: float | None = None
    while True:
        await asyncio.sleep(every)
        now = activity()
        if now != last:
            last, changed = now, monotonic()
        elif changed is not None and monotonic() - changed >= quiet:
            changed = None
            await asyncio.get_running_loop().run_in_executor(None, release)


_paused = 0
_resume = False
_thaw_pending = False
_thaw_armed = False
_counted = 0
# Seconds from the end of bulk work to the collection that follows it.
THAW_AFTER = 1.0
# Containers left alive by bulk work below which nothing is frozen: the collector walks a few
# thousand objects in a millisecond, while a thaw walks the whole heap (0.5 s at 100k functions).
FREEZE_AT = 20_000
_pause_lock = threading.Lock()


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cycle collector while building or reading large acyclic data (catalogs).

    Process-wide and nestable across threads. When the last ``bulk`` ends, what lives then is
    frozen (``gc.freeze``) before the collector runs again: resumed over a just-parsed catalog,
    its next three passes walked all of it (1.1 s for 100k functions), though none of it is in
    a cycle and it is freed by reference counting all the same. ``THAW_AFTER`` seconds later (or
    at ``release``, if sooner) a thaw collects once, so cycles that any thread made meanwhile are
    not kept, whether the work succeeded or not. Work that left fewer than ``FREEZE_AT`` new
    containers alive (a catalog body whose definitions were nearly all written before) is neither
    frozen nor thawed: the collector simply resumes.
    """
    global _paused, _resume, _thaw_pending, _thaw_armed, _counted
    with _pause_lock:
        if _paused == 0:
            _resume = gc.isenabled()
            gc.disable()
            _counted = gc.get_count()[0]
        _paused += 1
    try:
        yield
    finally:
        with _pause_lock:
            _paused -= 1
            if _paused == 0:
                # The youngest generation's count: containers allocated less those freed since the pause.
                left = gc.get_count()[0] - _counted
                if left >= FREEZE_AT:
                    gc.freeze()
                    _thaw_pending = True
                if _resume:
                    gc.enable()
                if _thaw_pending and not _thaw_armed:
                    _thaw_armed = True
                    timer = threading.Timer(THAW_AFTER, _thaw)
                    timer.daemon = True
                    timer.start()


def _thaw() -> None:
    """Collect what ``bulk`` froze that is garbage by now, and freeze the rest again (as ``settle`` left it).

    A full collection over everything alive, model included: once after bulk work, not per request.
    Skipped while a ``bulk`` runs: its end arms the next thaw.
    """
    global _thaw_pending, _thaw_armed
    with _pause_lock:
        _thaw_armed = False
        if not _thaw_pending or _paused:
            return
        _thaw_pending = False
    # Outside the lock: a finalizer that parses (enters ``bulk``) must not wait on it.
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def settle(*, arenas: int | None = None) -> None:
    """Prepare a long-running process: cap the C allocator's arenas, collect once, freeze what lives.

    glibc gives each thread that meets contention an arena of its own (up to eight per core),
    and each keeps the pages its thread freed: the event loop, the worker threads and the
    encoder's threads together held hundreds of MB apart. One arena per core (``arenas``) serves them.
    ``gc.freeze``: the model, libraries and settings alive now live as long as the process, and
    without it each full collection walks them all again.
    """
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_ARENA_MAX, max(1, arenas or os.cpu_count() or 1))
    gc.collect()
    gc.freeze()


_M_ARENA_MAX = -8  # glibc's malloc.h
