"""Move an embedded deployment (catalogs, history, route records, memories, usage examples) to a Qdrant server.

Every collection of the data directory is copied with its point ids, payloads and vectors,
in batches; the server creates its collections with the configured sharding and
replication. Points are upserted by id, so running the migration again writes the same
points over themselves and duplicates nothing. The meta collection (the active generation
and the catalog records) goes last, so a server that is already serving never points at a
generation whose vectors are not all there yet.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from qdrant_client.http.exceptions import UnexpectedResponse

from router.catalog.records import META
from router.common import arguments
from router.server.backends import open_server
from router.server.settings import StorageSettings
from router.sessions.history import MESSAGES
from router.sessions.routes import CALLS, ROUTES
from router.storage.base import Collection, CollectionSpec, Storage
from router.storage.edge_export import EdgeExport, StoredCollection, collection_names
from sync.reconcile import ProgressFactory

log = logging.getLogger(__name__)
# Collections of fixed name are created as the router itself would; the others (one per
# model or generation) are described by the data directory.
_KNOWN: dict[str, CollectionSpec] = {spec.name: spec for spec in (META, MESSAGES, ROUTES, CALLS)}


@dataclass(frozen=True)
class CollectionCopy:
    """What the migration did to one collection.

    Attributes:
        name: the collection (without the server's prefix).
        source: points in the data directory.
        target: points on the server afterwards.
        pruned: points deleted from the server because the data directory lacks them.
    """

    name: str
    source: int
    target: int
    pruned: int = 0

    @property
    def verified(self) -> bool:
        """Whether the server holds exactly as many points as the data directory."""
        return self.source == self.target


@dataclass
class Migration:
    """The outcome of a migration, one entry per collection."""

    collections: list[CollectionCopy] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        """Whether every collection's counts agree."""
        return all(c.verified for c in self.collections)

    @property
    def points(self) -> int:
        """Points copied in all."""
        return sum(c.source for c in self.collections)

    def report(self, *, source: str, target: str) -> list[str]:
        """One line per collection, then whether the counts agree."""
        lines = []
        for copy in self.collections:
            line = f"{copy.name}: {copy.source} points copied, the server holds {copy.target}"
            if copy.pruned:
                line += f" ({copy.pruned} pruned)"
            if copy.target > copy.source:
                line += f"; {copy.target - copy.source} not in {source} (written since, or by another router; --prune)"
            elif copy.target < copy.source:
                line += f"; {copy.source - copy.target} MISSING"
            lines.append(line)
        summary = f"migrated {self.points} points in {len(self.collections)} collections from {source} to {target}"
        lines.append(f"{summary}; counts verified" if self.verified else f"{summary}; counts differ (see above)")
        return lines


def migrate(
    source: EdgeExport,
    target: Storage,
    *,
    batch: int = 256,
    prune: bool = False,
    progress: ProgressFactory | None = None,
) -> Migration:
    """Copy every collection of ``source`` to ``target`` and count the points on both sides.

    Args:
        source: the embedded data directory, opened (and locked) for reading.
        target: the server storage.
        batch: points per write (at least 1).
        prune: delete the points of the server's copies that the data directory does not hold.
        progress: makes a progress callback per collection, given its name and point count.
    """
    migration = Migration()
    for name in sorted(source.names(), key=lambda name: (name == META.name, name)):
        with source.open(name) as stored:
            spec = _KNOWN.get(name, stored.spec)
            copy = _copy(stored, target.collection(spec), batch=batch, prune=prune, progress=progress)
        log.info(
            "collection migrated",
            extra={"collection": name, "source": copy.source, "target": copy.target, "pruned": copy.pruned},
        )
        migration.collections.append(copy)
    return migration


def _copy(
    stored: StoredCollection, collection: Collection, *, batch: int, prune: bool, progress: ProgressFactory | None
) -> CollectionCopy:
    report = progress(stored.spec.name, stored.count) if progress is not None and stored.count else None
    kept: set[str] = set()
    done = 0
    for points in stored.points(batch=batch):
        collection.upsert(points)
        if prune:
            kept.update(p.id for p in points)
        done += len(points)
        if report is not None:
            report(done, stored.count)
    pruned = 0
    if prune:
        stale = [r.id for r in collection.scroll(fields=()) if r.id not in kept]
        for start in range(0, len(stale), batch):
            collection.delete(stale[start : start + batch])
        pruned = len(stale)
    return CollectionCopy(stored.spec.name, stored.count, collection.count(), pruned)


def command(
    settings: StorageSettings, data: Path, *, batch: int, prune: bool, progress: ProgressFactory | None = None
) -> int:
    """``router migrate``: copy ``data`` to the configured server; the exit status.

    2 for a bad command line, 3 when the server refuses a collection, else as ``copy_directory``.
    """
    if batch < 1:
        print(f"router migrate: --batch must be at least 1, not {batch}", file=sys.stderr)  # noqa: T201
        return 2
    if problem := arguments.not_a_directory(data):
        print(f"router migrate: data directory {data} {problem}", file=sys.stderr)  # noqa: T201
        return 2
    target = open_server(settings)
    try:
        return copy_directory(data, target, batch=batch, prune=prune, progress=progress)
    except UnexpectedResponse as exc:
        # A collection of that name with other vectors, say: say what the server answered.
        detail = exc.content.decode(errors="replace")[:500]
        print(f"router migrate: {target.location} refused ({exc.status_code}): {detail}", file=sys.stderr)  # noqa: T201
        return 3
    finally:
        target.close()


def copy_directory(
    data: Path, target: Storage, *, batch: int = 256, prune: bool = False, progress: ProgressFactory | None = None
) -> int:
    """Copy the data directory to ``target`` and print a line per collection; 1 when the counts disagree."""
    if not collection_names(data):
        print(f"router migrate: {data} holds no router data", file=sys.stderr)  # noqa: T201
        return 2
    source = EdgeExport(data)
    try:
        result = migrate(source, target, batch=batch, prune=prune, progress=progress)
    finally:
        source.close()
    print("\n".join(result.report(source=str(data), target=target.location)))  # noqa: T201
    return 0 if result.verified else 1
