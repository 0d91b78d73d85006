"""The worker loop: make the store equal to a catalog directory, once or on every change.

The directory holds one file per namespace, ``<namespace>.json|.yaml|.yml`` (``sync.files``
reads them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import watchfiles

from router.common.errors import InvalidRequest, Unavailable
from router.storage.base import StorageUnavailable
from sync.diff import Summary
from sync.files import SUFFIXES, CatalogFile, scan, source_label
from sync.service import CatalogService

log = logging.getLogger(__name__)
# A failed pass is tried again after this long, doubling up to the cap while passes keep failing.
RETRY_SECONDS = 1.0
RETRY_CAP_SECONDS = 10.0


@dataclass(frozen=True)
class Outcome:
    """What one pass did to one namespace: a summary, a rejection or a skip."""

    namespace: str
    summary: Summary | None = None
    error: str | None = None
    skipped: str | None = None


@dataclass
class Report:
    """What one pass over the directory did."""

    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def rejected(self) -> list[Outcome]:
        """Namespaces whose file failed to parse or validate."""
        return [o for o in self.outcomes if o.error is not None]


class DirectorySync:
    """Keeps the store equal to the catalog files of one directory.

    A file that fails validation changes nothing in its namespace. A file that turns
    empty or disappears keeps its namespace unless ``allow_delete`` is set.

    Args:
        service: the catalog writer.
        directory: the catalog directory.
        allow_delete: let an emptied or deleted file delete its namespace.
    """

    def __init__(self, service: CatalogService, directory: Path, *, allow_delete: bool = False) -> None:
        self._service = service
        self._directory = directory
        self._allow_delete = allow_delete
        self._source = source_label(directory)
        self._seen: dict[str, str] = {}
        # Each rejected file's error, or the bytes the store refused: a later pass that finds the same says nothing.
        self._reported: dict[str, str] = {}
        self.first_pass_done = asyncio.Event()

    @property
    def source(self) -> str:
        """The label of the catalogs this worker keeps (``dir:<path>``)."""
        return self._source

    def has_file(self, namespace: str) -> bool:
        """Whether the directory holds a file of ``namespace`` (before or after its first pass)."""
        return any((self._directory / f"{namespace}{suffix}").is_file() for suffix in SUFFIXES)

    async def run_once(self) -> Report:
        """Reconcile every namespace whose file changed since the last pass (all on the first)."""
        if not self._directory.is_dir():
            raise FileNotFoundError(f"catalog directory {self._directory} does not exist")
        files = await asyncio.to_thread(scan, self._directory, seen=dict(self._seen))
        said = set(self._reported) - set(files)
        for gone in said:  # back with the same fault, it is said again
            del self._reported[gone]
        report = Report()
        broken: Exception | None = None
        for namespace, file in files.items():
            if file.error is None and file.fingerprint == self._seen.get(namespace):
                continue  # applied from these very bytes by an earlier pass
            reported = self._reported.get(namespace)
            if reported is not None and reported in (file.error, file.fingerprint):
                continue  # rejected, and said so, by an earlier pass
            try:
                report.outcomes.append(await self._apply(file))
            except (StorageUnavailable, Unavailable):  # storage or the model is down: every file would wait on it
                raise
            except Exception as exc:
                # One namespace's failure must not hold back the others' files; the pass fails and is retried.
                log.exception("catalog file not applied", extra={"namespace": namespace})
                broken = broken or exc
        await self._vanished(set(files), report, said=said)
        if broken is not None:
            raise broken
        self.first_pass_done.set()
        return report

    async def _apply(self, file: CatalogFile) -> Outcome:
        namespace = file.namespace
        if file.error is not None:
            return self._rejected(namespace, file.error)
        if file.empty and not self._allow_delete:
            stored = namespace in await self._service.catalogs.records()
            kept = "kept the stored catalog (allow deletion to empty it)" if stored else "no catalog is stored for it"
            reason = f"{file.path} lists no function; {kept}"
            log.warning("catalog file empty", extra={"namespace": namespace, "detail": reason})
            self._service.log.kept(namespace, self._source, reason)
            self._reported[namespace] = file.fingerprint  # said once, until the file changes
            self._seen.pop(namespace, None)  # restored as it was, it is applied again: the status says so
            return Outcome(namespace, skipped=reason)
        # Forgotten until the write succeeds: one cut short must not pass for the file seen before.
        self._seen.pop(namespace, None)
        if file.empty:
            known = namespace in await self._service.catalogs.records()
            summary = await self._service.remove(namespace) if known else Summary(namespace)
        else:
            try:
                summary = await self._service.apply(namespace, file.functions, source=self._source, pinned=file.pinned)
            except InvalidRequest as exc:  # more functions than a catalog may hold
                outcome = self._rejected(namespace, f"{file.path}: {exc.detail}")
                self._reported[namespace] = file.fingerprint  # the file parsed: its bytes are what was refused
                return outcome
        self._seen[namespace] = file.fingerprint
        self._reported.pop(namespace, None)
        return Outcome(namespace, summary=summary)

    def _rejected(self, namespace: str, detail: str) -> Outcome:
        log.error("catalog file rejected", extra={"namespace": namespace, "detail": detail})
        self._service.counters.sync_failed(self._source, outcome="rejected")
        self._service.log.failed(namespace, self._source, detail, outcome="rejected")
        self._seen.pop(namespace, None)
        self._reported[namespace] = detail
        return Outcome(namespace, error=detail)

    async def _vanished(self, present: set[str], report: Report, *, said: set[str]) -> None:
        catalogs = await self._service.catalogs.records()
        for namespace, record in catalogs.items():
            if record.source != self._source or namespace in present:
                continue
            if not self._allow_delete:
                # Applied, or emptied (and said kept) before: its file going is said once.
                if namespace in self._seen or namespace in said or not self.first_pass_done.is_set():
                    reason = f"the file of {namespace!r} is gone; kept the stored catalog (allow deletion to remove it)"
                    log.warning("catalog file missing", extra={"namespace": namespace, "detail": reason})
                    self._service.log.kept(namespace, self._source, reason)
                    report.outcomes.append(Outcome(namespace, skipped=reason))
                    self._seen.pop(namespace, None)
                continue
            report.outcomes.append(Outcome(namespace, summary=await self._service.remove(namespace)))
            self._seen.pop(namespace, None)

    async def watch(
        self,
        *,
        stop: asyncio.Event | None = None,
        debounce_ms: int = 200,
        retry_seconds: float = RETRY_SECONDS,
        on_pass: Callable[[bool], None] | None = None,
    ) -> None:
        """Reconcile now, then again whenever a catalog file of the directory changes.

        A pass runs once changes have settled for ``debounce_ms``. A pass that fails (storage
        unreachable) is tried again without waiting for a change: after ``retry_seconds``, then
        twice as long after each failure, up to ten seconds (or ``retry_seconds`` when longer).
        ``on_pass`` is told after each pass whether it succeeded. A directory deleted and made
        again, or swapped for another (``mv``), is watched anew, and so is one whose watcher
        failed (a file name that is not UTF-8): missed changes are caught by a pass.
        """
        retry = _Retry(retry_seconds)
        retry.passed(await self._pass(on_pass))
        while stop is None or not stop.is_set():
            try:
                await self._watch(stop, debounce_ms, retry, on_pass)
            except Exception as exc:  # the watcher itself failed: watch again, and let a pass catch up
                log.warning("catalog directory watch failed; watching again", extra={"detail": f"{exc!r}"})
                if stop is not None:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), retry.seconds)
                else:
                    await asyncio.sleep(retry.seconds)
            if stop is None or not stop.is_set():
                retry.passed(await self._pass(on_pass))

    async def _watch(
        self, stop: asyncio.Event | None, debounce_ms: int, retry: _Retry, on_pass: Callable[[bool], None] | None
    ) -> None:
        """Watch the directory until a stop, or until the path names another directory than the one watched."""
        watched = _identity(self._directory)
        if watched is None:
            raise FileNotFoundError(f"{self._directory}: no such directory")
        settle = max(debounce_ms, 50)
        caught_up = False
        async for changes in watchfiles.awatch(
            self._directory,
            watch_filter=_catalog_file,
            debounce=max(settle, 1600),
            step=settle,
            stop_event=stop,
            recursive=False,
            rust_timeout=max(1, round(min(retry.base, 1.0) * 1000)),
            yield_on_timeout=True,
        ):
            if _identity(self._directory) != watched:  # deleted, or replaced: its watcher sees no more
                return
            # A file written after the first pass but before the watcher started raises no event:
            # the first tick (a change, or the first timeout) passes again; unchanged files are not parsed.
            first_tick, caught_up = not caught_up, True
            if not changes and not first_tick and not retry.due():
                continue
            retry.passed(await self._pass(on_pass))

    async def _pass(self, on_pass: Callable[[bool], None] | None = None) -> bool:
        """One pass; False when it failed (and will be tried again)."""
        try:
            await self.run_once()
            healthy = True
        except StorageUnavailable as exc:
            log.warning("catalog sync pass failed; will retry", extra={"detail": str(exc)})
            healthy = False
        except Exception:
            # A failed pass (unreadable directory, a bug) must not end the worker.
            log.exception("catalog sync pass failed; will retry")
            healthy = False
        if on_pass is not None:
            on_pass(healthy)
        return healthy


class _Retry:
    """When a failed pass is tried again: ``base`` seconds after the first failure, doubling to a cap."""

    def __init__(self, base: float) -> None:
        self.base = base
        self.seconds = base
        self._due: float | None = None

    def passed(self, healthy: bool) -> None:
        """Record a pass: a success clears the retry, a failure sets (or lengthens) the next."""
        if healthy:
            self.seconds, self._due = self.base, None
            return
        if self._due is not None:
            self.seconds = min(self.seconds * 2, max(RETRY_CAP_SECONDS, self.base))
        self._due = time.monotonic() + self.seconds

    def due(self) -> bool:
        """Whether a failed pass is to be tried again now."""
        return self._due is not None and time.monotonic() >= self._due


def _identity(directory: Path) -> tuple[int, int] | None:
    try:
        found = directory.stat()
    except OSError:
        return None
    return (found.st_dev, found.st_ino)


def _catalog_file(_change: watchfiles.Change, path: str) -> bool:
    """Changes worth a pass: catalog files (not a ready file, an editor's swap file, a hidden file).

    A Kubernetes ConfigMap's files are links through ``..data``, which an update swaps: only its
    ``..`` entries change, never the catalog files' own.
    """
    name = Path(path).name
    return name.startswith("..") or (Path(name).suffix in SUFFIXES and not name.startswith("."))
