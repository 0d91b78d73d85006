"""What this process's syncs did: each namespace's last result, the embedding under way, and counters."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from sync.diff import Summary


class SyncCounters:
    """Where syncs are counted: the process's metrics subclass it; itself, it counts nothing."""

    def synced(self, source: str, summary: Summary) -> None:
        """A reconcile completed."""

    def sync_failed(self, source: str, *, outcome: str = "failed") -> None:
        """A reconcile failed (``failed``), or a source was refused (``rejected``)."""

    def wrote(self, functions: int) -> None:
        """``functions`` were embedded and written."""


@dataclass(frozen=True)
class SyncResult:
    """The last sync of one namespace: when, from where, and whether it changed, failed or was refused."""

    namespace: str
    source: str
    outcome: str
    at: float
    counts: dict[str, int] = field(default_factory=dict)
    detail: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The result as JSON, its namespace aside."""
        return {k: v for k, v in asdict(self).items() if k != "namespace"}


@dataclass
class SyncProgress:
    """An embedding in progress: how many of the namespace's functions are embedded, and written, so far."""

    namespace: str
    total: int
    done: int = 0
    written: int = 0
    started_at: float = field(default_factory=time.time)

    def embedded(self, done: int, _total: int) -> None:
        """A progress callback: ``done`` of the functions are embedded."""
        self.done = max(self.done, done)

    def as_dict(self) -> dict[str, Any]:
        """The progress as JSON."""
        return asdict(self)


class SyncLog:
    """Last results by namespace and the syncs under way, kept in memory by the catalog writer."""

    def __init__(self) -> None:
        self.results: dict[str, SyncResult] = {}
        self.running: dict[str, SyncProgress] = {}

    def synced(self, source: str, summary: Summary) -> None:
        """Record a completed reconcile."""
        outcome = "changed" if summary.changed else "unchanged"
        self.results[summary.namespace] = SyncResult(summary.namespace, source, outcome, time.time(), summary.counts())

    def failed(self, namespace: str, source: str, detail: str, *, outcome: str = "failed") -> None:
        """Record a reconcile that failed, or a source refused before anything changed (``rejected``)."""
        self.results[namespace] = SyncResult(namespace, source, outcome, time.time(), detail=detail)

    def started(self, namespace: str, total: int) -> SyncProgress:
        """Note that ``total`` functions of ``namespace`` are being embedded."""
        progress = self.running[namespace] = SyncProgress(namespace, total)
        return progress

    def finished(self, namespace: str) -> None:
        """The embedding of ``namespace`` ended (written or not)."""
        self.running.pop(namespace, None)
