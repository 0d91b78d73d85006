"""Freed memory given back to the operating system.

Parsing a large catalog (a 100k-function ``PUT`` is about 60 MB of JSON, several times
that as Python objects) leaves its freed objects with the C allocator, which keeps the
pages for reuse: without a trim the process stays hundreds of MB larger long after the
catalog is stored. glibc's ``malloc_trim`` returns the free pages of every arena; on
other C libraries this does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from functools import cache
from typing import Any

__all__ = ["release", "release_soon"]


@cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def release() -> bool:
    """Return the allocator's free pages to the OS; whether the C library could (glibc)."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


_scheduled: set[asyncio.AbstractEventLoop] = set()


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
