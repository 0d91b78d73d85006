"""What the writer knows of each namespace it wrote, with the store and catalog record it describes.

``StoredHashes`` keeps each namespace's ``Known`` (content hashes, fingerprints and, after a split
body, the digests of its definitions' bytes) so that a no-op or one-change apply reads no hashes
from storage; ``sync.known_files.KnownFiles`` carries it from a clean stop to the next start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from router.limits import LimitSettings
from router.meta import CatalogRecord
from router.retrieval.index import FunctionStore
from sync.diff import Known
from sync.known_files import KnownFiles

__all__ = ["StoredHashes"]

log = logging.getLogger(__name__)

# Functions whose stored content hash is compared with a saved record before it is used.
SAMPLE = 64


class StoredHashes:
    """The stored content hashes of each namespace as the one writer last left them.

    A no-op or one-change apply of a large catalog then reads no hashes from storage. Each entry
    goes with the store it describes and the catalog record written with it: every write of a
    catalog records it anew, so a record that changed since means another writer (an API replica
    on the same Qdrant server) wrote the namespace, and the store is read again.
    """

    def __init__(self, files: KnownFiles | None = None) -> None:
        self._known: dict[str, tuple[object, CatalogRecord, Known]] = {}
        self.files = files

    def take(self, store: object, namespace: str, record: CatalogRecord | None) -> Known | None:
        """What is known of ``namespace`` in ``store`` if nobody wrote it since, else None.

        Taken out: until ``keep`` is called again (after a successful write) the store is unknown,
        and so is what the last clean stop saved of it.
        """
        if self.files is not None:
            self.files.discard(namespace)
        cached = self._known.pop(namespace, None)
        if cached is None or record is None or cached[0] is not store or cached[1] != record:
            return None
        return cached[2]

    def parts(self, namespace: str) -> Mapping[bytes, str] | None:
        """``Known.parts`` of what was last kept for ``namespace``, without taking it (a hint: ``take`` decides)."""
        cached = self._known.get(namespace)
        return None if cached is None else cached[2].parts

    def keep(self, store: object, namespace: str, record: CatalogRecord | None, known: Known) -> None:
        """Remember that ``store`` holds what ``known`` says for ``namespace``, as recorded by ``record``."""
        if record is not None:
            self._known[namespace] = (store, record, known)

    def forget(self, namespace: str) -> None:
        """Drop what is known of ``namespace``."""
        self._known.pop(namespace, None)
        if self.files is not None:
            self.files.discard(namespace)

    def restore(
        self, store: FunctionStore, namespace: str, record: CatalogRecord | None, limits: LimitSettings
    ) -> None:
        """Keep what the last clean stop saved of ``namespace`` in ``store``, when nothing is known of it yet."""
        if self.files is None or namespace in self._known:
            return
        known = self.files.take(namespace, store.generation.id, record, limits)
        if known is None or record is None:
            return
        try:
            borne_out = _borne_out(store, namespace, known)
        except Exception as exc:  # the store cannot say: the body is decoded whole, as without a record
            log.warning("saved catalog record unchecked", extra={"namespace": namespace, "error": str(exc)})
            return
        if not borne_out:
            log.warning("saved catalog record dropped: the store holds other functions", extra={"namespace": namespace})
            return
        self.keep(store, namespace, record, known)

    def save(self, store: FunctionStore | None) -> int:
        """Write what is known of each namespace of ``store`` for the next process; how many were written."""
        if self.files is None:
            return 0
        if store is None:
            return self.files.save(())
        kept = [
            (ns, store.generation.id, record, known) for ns, (of, record, known) in self._known.items() if of is store
        ]
        return self.files.save(kept)


def _borne_out(store: FunctionStore, namespace: str, known: Known) -> bool:
    """Whether ``store`` holds as many functions as ``known`` names, with its content hashes for a sample of them."""
    if store.count(namespace) != len(known):
        return False
    names = list(known)
    sample = names[:: max(1, -(-len(names) // SAMPLE))]
    return store.existing(namespace, sample) == {name: known[name] for name in sample}
