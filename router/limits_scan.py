"""A JSON body's limits read from its bytes: strings and nesting, without decoding it.

Walking a decoded 100k-function catalog field by field took over a second; its bytes show most
of what the walk looks for in a few array passes (``router.limits.check_bulk`` uses it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from router.limits import LimitSettings

__all__ = ["within_limits"]


def within_limits(body: bytes, limits: LimitSettings) -> bool:
    """Whether a JSON body's bytes show that its strings and nesting are within ``limits``.

    False when they cannot show it (``check_document`` then finds the field, or finds nothing):
    a ``\\u0000`` anywhere, bytes between two quotes of a string beyond ``text_chars`` (a string
    has at least one byte per character), or containers, outside strings, nested beyond ``depth``.
    Counts are not looked at.
    """
    import numpy as np

    if b"\\u0000" in body or b"\x00" in body:
        return False  # a NUL escape, or a body in UTF-16 or UTF-32 (which the decoder also takes)
    # One pass of bytes.translate marks the bytes that matter: quotes, openers, closers.
    marks = np.frombuffer(body.translate(_MARKS), dtype=np.uint8)
    at = np.flatnonzero(marks)
    kinds = marks[at]
    quotes = at[kinds == _QUOTE]
    raw = np.frombuffer(body, dtype=np.uint8)
    # A quote is escaped after an odd run of backslashes: runs counted a step at a time over the
    # quotes still in one, up to a bound past which the walk decides.
    behind = quotes[quotes > 0]
    backslashes = np.zeros(len(behind), dtype=np.int64)
    running = np.ones(len(behind), dtype=bool)
    for step in range(1, _RUN_BOUND + 1):
        running &= behind >= step
        running[running] = raw[behind[running] - step] == _BACKSLASH
        if not running.any():
            break
        backslashes += running
    else:
        return False
    quotes = np.concatenate([quotes[quotes == 0], behind[backslashes % 2 == 0]])
    if len(quotes) % 2:
        return False  # not JSON the decoder took: let the walk decide
    if len(quotes) and int((quotes[1::2] - quotes[0::2]).max()) - 1 > limits.text_chars:
        return False
    structural = kinds != _QUOTE
    brackets, opens = at[structural], kinds[structural] == _OPEN
    outside = np.searchsorted(quotes, brackets) % 2 == 0  # an even count of quotes before: not in a string
    steps = np.where(opens[outside], 1, -1)
    return not len(steps) or int(np.cumsum(steps).max()) <= limits.depth


_BACKSLASH = ord("\\")
_RUN_BOUND = 64  # backslashes in a row before a quote that the scan counts
_QUOTE, _OPEN, _CLOSE = 1, 2, 3
_MARKS = bytes(
    _QUOTE if byte == ord('"') else _OPEN if byte in b"{[" else _CLOSE if byte in b"}]" else 0 for byte in range(256)
)
