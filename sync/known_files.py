"""Each namespace's ``Known`` on disk, from a clean stop to the next start.

A split catalog ``PUT`` decodes only the definitions whose bytes the writer knows no digest of
(``Known.parts``); a process that just started knew none and decoded the whole body (3-4 s at
100k functions). So ``KnownFiles`` writes each namespace's record to a file at a clean stop,
and the next process takes it back on its first ``PUT`` of that namespace.

A file is used at most once and only while it is certainly true:
- at start every file becomes ``*.open``; a ``*.open`` left by a process that did not stop
  cleanly is deleted unread (it may predate a write cut short, which leaves the catalog record
  as it was);
- it must name the store generation and the catalog record (``CatalogRecord.write``) found now,
  and the limits and validation code the bytes were accepted under; its checksum must hold;
- the store must still hold as many functions as it names, with the content hashes it gives
  for a sample of them (``sync.known.StoredHashes.restore``): a collection emptied, created
  anew or holding another count behind the catalog record's back does not pass, and a copy that
  differs in many functions is caught by the sample (one that differs in a few may not be);
- any write to a namespace in this process drops its file first, also after a stop saved it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from router import catalog, catalog_body, limits, limits_scan
from router.limits import LimitSettings
from router.meta import CatalogRecord
from router.storage.edge_shard import sync_dir
from sync import diff
from sync.diff import Known

__all__ = ["KnownFiles", "validation_key"]

log = logging.getLogger(__name__)

FORMAT = 2
SUFFIX = ".known"
OPEN = ".open"
PARTIAL = ".partial"  # a file being written
DIGEST_SIZE = 16  # ``CatalogBody.digests``: xxh3-128


# The libraries that parse and digest a body's bytes: another version may accept or tell apart other bytes.
LIBRARIES = ("msgspec", "numpy", "orjson", "xxhash")


def validation_key() -> str | None:
    """A digest of the code that accepts a definition's bytes and lays out its entry; None when unreadable."""
    sources = hashlib.sha256()
    try:
        for module in (catalog, catalog_body, limits, limits_scan, diff):
            sources.update(Path(str(module.__file__)).read_bytes())
        sources.update(sys.version.encode())
        for library in LIBRARIES:
            sources.update(f"{library}=={metadata.version(library)}".encode())
    except (OSError, TypeError, metadata.PackageNotFoundError):  # no sources (a frozen or zipped install)
        return None
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
        self._saved: set[str] = set()  # stems of the files this process's stop wrote or put back
        self._validation = validation_key()

    def open(self) -> None:
        """At start: drop what an unclean stop left (or half wrote), and set aside what a clean stop wrote.

        Without the validation code to key on, or when the renames cannot be made durable, every
        file is deleted instead: a write could not be sure to drop one.
        """
        if not self.root.is_dir():
            return
        for left in [*self.root.glob(f"*{SUFFIX}{OPEN}"), *self.root.glob(f"*{SUFFIX}{PARTIAL}")]:
            left.unlink(missing_ok=True)
        if self._validation is None:
            log.warning("saved catalog records are not used: the validation code cannot be read")
            for saved in self.root.glob(f"*{SUFFIX}"):
                saved.unlink(missing_ok=True)
            _sync_dir(self.root)
            return
        for saved in self.root.glob(f"*{SUFFIX}"):
            saved.rename(saved.with_name(saved.name + OPEN))
            self._open.add(saved.name.removesuffix(SUFFIX))
        if not _sync_dir(self.root):
            log.warning(
                "saved catalog records dropped: their directory cannot be synced", extra={"path": str(self.root)}
            )
            for stem in self._open:
                (self.root / f"{stem}{SUFFIX}{OPEN}").unlink(missing_ok=True)
            self._open.clear()

    def holds(self, namespace: str) -> bool:
        """Whether a file of ``namespace`` is left to take."""
        return _stem(namespace) in self._open

    def discard(self, namespace: str) -> None:
        """Drop ``namespace``'s file: a write to it begins, after which the file may no longer be true."""
        stem = _stem(namespace)
        if stem in self._open:
            self._open.discard(stem)
            (self.root / f"{stem}{SUFFIX}{OPEN}").unlink(missing_ok=True)
        if stem in self._saved:  # a write after the stop saved it: the next start must not find it
            self._saved.discard(stem)
            (self.root / f"{stem}{SUFFIX}").unlink(missing_ok=True)
            if not _sync_dir(self.root):
                log.warning("a dropped catalog record may come back after a crash", extra={"path": str(self.root)})

    def take(
        self, namespace: str, generation: str, record: CatalogRecord | None, limits: LimitSettings
    ) -> Known | None:
        """``namespace``'s record as the last clean stop left it, if it still describes the store; at most once."""
        stem = _stem(namespace)
        if stem not in self._open:
            return None
        try:
            if record is None:  # the namespace is gone
                return None
            return self._read(self.root / f"{stem}{SUFFIX}{OPEN}", namespace, generation, record, limits)
        except Exception as exc:  # whatever is wrong with the file, the body is decoded whole
            log.warning("saved catalog record unreadable", extra={"namespace": namespace, "error": str(exc)})
            return None
        finally:
            self.discard(namespace)

    def save(self, known: Iterable[tuple[str, str, CatalogRecord, Known]]) -> int:
        """At a clean stop: write each ``(namespace, generation, record, known)`` that has parts; how many.

        A file this process set aside and never took is put back for the next one. A namespace
        whose file cannot be written is passed over (its next ``PUT`` decodes whole).
        """
        written = 0
        if self._validation is None:
            return 0
        for namespace, generation, record, record_known in known:
            state = record_known.state()
            # A record without a write id is not told apart; an empty catalog needs no digests.
            if state is None or not record.write or not state[0]:
                continue
            try:
                self._write(namespace, generation, record, state)
            except Exception as exc:
                log.warning("cannot save a catalog record", extra={"namespace": namespace, "error": str(exc)})
                continue
            self._saved.add(_stem(namespace))
            written += 1
        for stem in self._open:  # not taken, so nothing wrote its namespace here: still true
            try:
                (self.root / f"{stem}{SUFFIX}{OPEN}").replace(self.root / f"{stem}{SUFFIX}")
            except OSError as exc:
                log.warning("cannot put back a saved catalog record", extra={"error": str(exc)})
                continue
            self._saved.add(stem)
        if written or self._open:
            _sync_dir(self.root)
        self._open.clear()
        return written

    def _write(
        self, namespace: str, generation: str, record: CatalogRecord, state: tuple[list[str], bytes, bytes]
    ) -> None:
        names, entries, digests = state
        listed = orjson.dumps(names)
        header = {
            **self._key(namespace, generation, record, self.limits),
            "count": len(names),
            "digest_size": len(digests) // max(1, len(names)),
            "sha256": _checksum(listed, entries, digests),
        }
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / f"{_stem(namespace)}{SUFFIX}"
        temporary = path.with_name(path.name + PARTIAL)
        with temporary.open("wb") as out:
            out.write(orjson.dumps(header) + b"\n" + listed + b"\n")
            out.write(entries)
            out.write(digests)
            out.flush()
            os.fsync(out.fileno())
        temporary.replace(path)

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
        header = orjson.loads(data[:first])
        if not isinstance(header, dict):
            raise ValueError(f"{path.name}: the header is not an object")
        expected = self._key(namespace, generation, record, limits)
        if any(header.get(key) != value for key, value in expected.items()):
            return None
        listed, rest = data[first + 1 : second], memoryview(data)[second + 1 :]
        count, size = int(header["count"]), int(header["digest_size"])
        if size != DIGEST_SIZE or len(rest) != count * (Known.ENTRY + size):
            raise ValueError(f"{path.name}: {len(rest)} bytes for {count} functions of {size}-byte digests")
        split = count * Known.ENTRY
        entries, digests = bytes(rest[:split]), bytes(rest[split:])
        if header.get("sha256") != _checksum(listed, entries, digests):
            raise ValueError(f"{path.name}: checksum mismatch")
        names = orjson.loads(listed)
        if not isinstance(names, list) or len(names) != count or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{path.name}: the names do not match the count")
        return Known.restored(names, entries, digests, digest_size=size)


def _stem(namespace: str) -> str:
    return hashlib.sha256(namespace.encode()).hexdigest()[:32]


def _checksum(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part)
    return digest.hexdigest()


def _sync_dir(path: Path) -> bool:
    try:
        sync_dir(path)
    except OSError:
        return False
    return True
