"""The word counts a writer leaves ready after a change, so that routes need not count them.

A catalog's IDF comes from counts over every function's terms (``FunctionStore.frequencies``),
which take reading every function (0.16 s at 10,000 functions). A sole writer (embedded storage)
moves the counts it kept by what it wrote (``FunctionStore.moves_counts``); any other case counts
anew in the background, so a ``PUT`` never waits for it.
"""

from __future__ import annotations

import asyncio
import logging

from router.retrieval.catalogs import Catalogs
from router.retrieval.index import FunctionStore

log = logging.getLogger(__name__)


class WordCounts:
    """Readies each space's word counts of a catalog's new version.

    Args:
        catalogs: the records and the spaces served.
    """

    def __init__(self, catalogs: Catalogs) -> None:
        self._catalogs = catalogs
        self._counting: set[asyncio.Task[None]] = set()

    async def after_change(self, namespace: str, *, since: float | None) -> None:
        """``namespace`` changed from version ``since`` (None: no record before); its record names the new one."""
        # The version as routes read it: the record's latest, whichever write of this change made it.
        record = await asyncio.to_thread(self._catalogs.meta.catalog, namespace)
        if record is None:
            return
        for index in (self._catalogs.index, self._catalogs.multilingual):
            if index is None:
                continue
            if not index.store.counted(namespace, record.updated_at, since=since):
                counting = asyncio.create_task(self._count(index.store, namespace, record.updated_at))
                self._counting.add(counting)
                counting.add_done_callback(self._counting.discard)

    async def settle(self) -> None:
        """Wait for the counts under way (before the storage closes)."""
        if self._counting:
            await asyncio.gather(*self._counting, return_exceptions=True)

    async def _count(self, store: FunctionStore, namespace: str, version: float) -> None:
        try:
            await asyncio.to_thread(store.frequencies, namespace, version)
        except Exception as exc:  # the next route counts
            log.warning("word count after a change failed", extra={"namespace": namespace, "detail": str(exc)})
