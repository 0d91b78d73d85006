"""``router sync``: reconcile a catalog directory once, or keep it reconciled, with a ready file for healthchecks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from router.common import arguments
from router.embedding import Progress
from router.server.settings import Settings

if TYPE_CHECKING:
    from sync.worker import DirectorySync

# Makes a progress bar for a label and a total (the command's tqdm bars).
ProgressBar = Callable[[str, int], Progress]


def ready_problem(ready: Path, *, watch: bool) -> str | None:
    """Why ``router sync`` cannot keep ``--ready-file`` at ``ready``, or None."""
    if not watch:
        return "--ready-file needs --watch"
    if ready.is_dir():
        return f"--ready-file {ready} is a directory"
    return None if ready.parent.is_dir() else f"--ready-file {ready}: its directory does not exist"


def _mark(ready_file: Path | None) -> Callable[[bool], None] | None:
    """Keeps ``ready_file`` present exactly while the last pass succeeded."""
    if ready_file is None:
        return None

    def mark(healthy: bool) -> None:
        if healthy:
            ready_file.write_text(json.dumps({"passed_at": time.time()}) + "\n")
        else:
            ready_file.unlink(missing_ok=True)

    return mark


async def _watch(worker: DirectorySync, settings: Settings, ready_file: Path | None) -> None:
    """Apply every change until SIGTERM or SIGINT, keeping ``ready_file`` while the last pass succeeded."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    mark = _mark(ready_file)
    if mark is not None:
        mark(False)  # a file left by an earlier run says nothing about this one
    watching = asyncio.create_task(
        worker.watch(
            stop=stop, debounce_ms=settings.sync.debounce_ms, retry_seconds=settings.sync.retry_seconds, on_pass=mark
        )
    )
    stopped = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({watching, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not watching.done():
            # A signal during a pass stops it too: embedding a large file takes minutes, past a container's
            # grace period. What was written stays consistent; the next start goes on from there.
            watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    finally:
        stopped.cancel()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)
        if mark is not None:
            mark(False)


async def sync(
    settings: Settings, *, watch: bool, ready_file: Path | None = None, progress: ProgressBar | None = None
) -> int:
    """Reconcile the catalog directory once (or keep watching); 1 when a file was rejected."""
    from router.server.runtime import Runtime
    from sync.worker import DirectorySync

    catalog = settings.sync.catalog
    if catalog is None:
        print("router sync: give the catalog directory: --catalog DIR or ROUTER_SYNC_CATALOG", file=sys.stderr)
        return 2
    if (problem := arguments.not_a_directory(catalog)) is not None:
        print(f"router sync: catalog directory {catalog} {problem}", file=sys.stderr)
        return 2
    # The runtime's own directory watcher stays off: this command drives the worker itself.
    settings.sync = settings.sync.model_copy(update={"catalog": None})
    runtime = Runtime(settings, progress=progress)
    await runtime.start()
    try:
        service = runtime.service
        await service.rebuild()
        worker = DirectorySync(service, catalog, allow_delete=settings.sync.allow_delete)
        if watch:
            await _watch(worker, settings, ready_file)
            return 0
        report = await worker.run_once()
    finally:
        await runtime.stop()
    for outcome in report.outcomes:
        if outcome.summary is not None:
            counts = " ".join(f"{k}={v}" for k, v in outcome.summary.counts().items())
            print(f"{outcome.namespace}: {counts}")
        elif outcome.error is not None:
            print(f"{outcome.namespace}: REJECTED {outcome.error}")
        else:
            print(f"{outcome.namespace}: SKIPPED {outcome.skipped}")
    if not report.outcomes:
        print("nothing changed")
    return 1 if report.rejected else 0
