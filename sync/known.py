"""What the writer knows of each namespace it wrote: in memory, and on disk from a clean stop to the next start.

``StoredHashes`` keeps each namespace's ``Known`` (content hashes, fingerprints and, after a split
body, the digests of its definitions' bytes) with the store and catalog record it describes.

A split catalog ``PUT`` decodes only the definitions whose bytes the writer knows no digest of
(``Known.parts``); a process that just started knew none and decoded the whole body (3-4 s at
100k functions). So ``KnownFiles`` writes each namespace's record to a file at a clean stop,
and the next process takes it back on its first ``PUT`` of that namespace.

A file is used at most once and only while it is certainly true:
- at start every file becomes ``*.open``; a ``*.open`` left by a process that did not stop
  cleanly is deleted unread (it may predate a write cut short, which leaves the catalog record
  as it was);
- it must name the store generation and the catalog record (``CatalogRecord.write``) found now,
  and the limits and validation code the bytes were accepted under;
- any write to a namespace in this process drops its file first.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from router import catalog, catalog_body, limits, limits_scan
from router.limits import LimitSettings
from router.meta import CatalogRecord
from router.retrieval.index import FunctionStore
from router.storage.edge_shard import sync_dir
from sync.diff import Known

__all__ = ["KnownFiles", "StoredHashes"]

log = logging.getLogger(__name__)

FORMAT = 1
SUFFIX = ".known"
OPEN = ".open"
PARTIAL = ".partial"  # a file being written


def validation_key() -> str:
    """A digest of the code that decides whether a definition's bytes are accepted."""
    sources = hashlib.sha256()
    for module in (catalog, catalog_body, limits, limits_scan):
        sources.update(Path(str(module.__file__)).read_bytes())
    return sources.hexdigest()


class KnownFiles:
    """Each namespace's ``Known`` in a directory: written at a clean stop, taken back once after the start.

    Args:
        root: the directory (created when needed).
        limits: the limits the bytes written are accepted under (the service's).
    """

    def __init__(self, root: Path, limits: LimitSettings) -> None:
        self.root = root
        self.limits = limits
        self._open: set[str] = set()  # namespaces' file stems left to take in this process
        self._validation = validation_key()

    def open(self) -> None:
        """At start: drop what an unclean stop left (or half wrote), and set aside what a clean stop wrote."""
        if not self.root.is_dir():
            return
        for left in [*self.root.glob(f"*{SUFFIX}{OPEN}"), *self.root.glob(f"*{SUFFIX}{PARTIAL}")]:
            left.unlink(missing_ok=True)
        for saved in self.root.glob(f"*{SUFFIX}"):
            saved.rename(saved.with_name(saved.name + OPEN))
            self._open.add(saved.name.removesuffix(SUFFIX))
        _sync_dir(self.root)

    def holds(self, namespace: str) -> bool:
        """Whether a file of ``namespace`` is left to take."""
        return _stem(namespace) in self._open

    def discard(self, namespace: str) -> None:
        """Drop ``namespace``'s file: a write to it begins, after which the file may no longer be true."""
        stem = _stem(namespace)
        if stem in self._open:
            self._open.discard(stem)
            (self.root / f"{stem}{SUFFIX}{OPEN}").unlink(missing_ok=True)

    def take(
        self, namespace: str, generation: str, record: CatalogRecord | None, limits: LimitSettings
    ) -> Known | None:
        """``namespace``'s record as the last clean stop left it, if it still describes the store; at most once."""
        stem = _stem(namespace)
        if stem not in self._open:
            return None
        if record is None:  # the namespace is gone
            self.discard(namespace)
            return None
        path = self.root / f"{stem}{SUFFIX}{OPEN}"
        try:
            known = self._read(path, namespace, generation, record, limits)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("saved catalog record unreadable", extra={"namespace": namespace, "error": str(exc)})
            known = None
        self.discard(namespace)
        return known

    def save(self, known: Iterable[tuple[str, str, CatalogRecord, Known]]) -> int:
        """At a clean stop: write each ``(namespace, generation, record, known)`` that has parts; how many.

        A file this process set aside and never took is put back for the next one.
        """
        written = 0
        for namespace, generation, record, record_known in known:
            state = record_known.state()
            if state is None:
                continue
            names, entries, digests = state
            header = {
                **self._key(namespace, generation, record, self.limits),
                "count": len(names),
                "digest_size": len(digests) // max(1, len(names)),
            }
            self.root.mkdir(parents=True, exist_ok=True)
            path = self.root / f"{_stem(namespace)}{SUFFIX}"
            temporary = path.with_name(path.name + PARTIAL)
            with temporary.open("wb") as out:
                out.write(orjson.dumps(header) + b"\n" + orjson.dumps(names) + b"\n")
                out.write(entries)
                out.write(digests)
                out.flush()
                os.fsync(out.fileno())
            temporary.replace(path)
            written += 1
        for stem in self._open:  # not taken, so nothing wrote its namespace here: still true
            (self.root / f"{stem}{SUFFIX}{OPEN}").replace(self.root / f"{stem}{SUFFIX}")
        if written or self._open:
            _sync_dir(self.root)
        self._open.clear()
        return written

    def _key(self, namespace: str, generation: str, record: CatalogRecord, limits: LimitSettings) -> dict[str, Any]:
        """What a saved record must match to be used: the file's format, the store, the write, the rules."""
        return {
            "format": FORMAT,
            "namespace": namespace,
            "generation": generation,
            "write": record.write,
            "limits": limits.model_dump(),
            "validation": self._validation,
        }

    def _read(
        self, path: Path, namespace: str, generation: str, record: CatalogRecord, limits: LimitSettings
    ) -> Known | None:
        data = path.read_bytes()
        first = data.index(b"\n")
        second = data.index(b"\n", first + 1)
        header: dict[str, Any] = orjson.loads(data[:first])
        expected = self._key(namespace, generation, record, limits)
        if any(header.get(key) != value for key, value in expected.items()):
            return None
        names: list[str] = orjson.loads(data[first + 1 : second])
        count, size = int(header["count"]), int(header["digest_size"])
        rest = memoryview(data)[second + 1 :]
        if len(names) != count or len(rest) != count * (Known.ENTRY + size):
            raise ValueError(f"{path.name}: {len(rest)} bytes for {count} functions")
        split = count * Known.ENTRY
        return Known.restored(names, bytes(rest[:split]), bytes(rest[split:]), digest_size=size)


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
        if known is not None and record is not None:
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


def _stem(namespace: str) -> str:
    return hashlib.sha256(namespace.encode()).hexdigest()[:32]


def _sync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        sync_dir(path)
