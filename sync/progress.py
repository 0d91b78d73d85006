"""Progress of long embeddings: logged by tenths, shown by the CLI's bar."""

from __future__ import annotations

import logging
from collections.abc import Callable

from router.embedding import Progress

__all__ = ["PROGRESS_THRESHOLD", "ProgressFactory", "both", "progress_for"]

log = logging.getLogger("sync.service")
ProgressFactory = Callable[[str, int], Progress]
# Below this many texts an embedding is quick enough to need no progress report.
PROGRESS_THRESHOLD = 200


def progress_for(shown: ProgressFactory | None, label: str, total: int) -> Progress | None:
    """Progress of embedding ``total`` texts: logged by tenths, and shown where ``shown`` makes a display."""
    if total < PROGRESS_THRESHOLD:
        return None
    return both(shown(label, total) if shown else None, _logged(label))


def both(first: Progress | None, second: Progress) -> Progress:
    """One progress callback calling ``first`` (when given), then ``second``."""
    if first is None:
        return second

    def report(done: int, total: int) -> None:
        first(done, total)
        second(done, total)

    return report


def _logged(label: str) -> Progress:
    last = [0]

    def report(done: int, total: int) -> None:
        tenth = done * 10 // max(total, 1)
        if tenth > last[0]:
            last[0] = tenth
            log.info("embedding", extra={"what": label, "done": done, "total": total})

    return report
