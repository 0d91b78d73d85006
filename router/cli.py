"""The ``router`` command: ``serve`` the API, ``sync`` a catalog directory, ``mcp`` as an MCP server."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from router import logs
from router.access import AuthSettings, exposure, is_loopback
from router.embedding import Progress
from router.errors import RouterError
from router.mcp import cli as mcp_cli
from router.settings import EmbeddingSettings, ServerSettings, Settings, StorageSettings, SyncSettings
from router.storage.base import StorageUnavailable

log = logging.getLogger("router.cli")


def _given(**values: Any) -> dict[str, Any]:
    """Only the flags that were given, so unset flags leave environment settings alone."""
    return {k: v for k, v in values.items() if v not in (None, False)}


def _common(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--data", type=Path, help="embedded storage directory (default ./data)")
    where.add_argument("--qdrant-url", help="Qdrant server URL (server mode)")
    parser.add_argument("--model", help="sentence-transformers model name or path")
    parser.add_argument("--text", help="function text template (name_description, name_description_parameters)")
    parser.add_argument("--allow-delete", action="store_true", help="let an emptied or removed file delete its catalog")
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-format", choices=["json", "text"])


def parser() -> argparse.ArgumentParser:
    """The command line."""
    root = argparse.ArgumentParser(prog="router", description="Contextual tool router: the functions that matter.")
    commands = root.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the HTTP API (and sync --catalog in the background)")
    serve.add_argument("--catalog", type=Path, help="catalog directory to keep in sync")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve without API keys on a host other than loopback (ROUTER_ALLOW_UNAUTHENTICATED)",
    )
    _common(serve)
    sync = commands.add_parser("sync", help="reconcile a catalog directory into storage")
    sync.add_argument("--catalog", type=Path, required=True, help="catalog directory")
    sync.add_argument("--watch", action="store_true", help="keep running and apply every change")
    _common(sync)
    mcp_cli.add_parser(commands)
    return root


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags given."""
    return Settings(
        embedding=EmbeddingSettings(**_given(model=args.model, text=args.text)),
        storage=StorageSettings(**_given(data=args.data, qdrant_url=args.qdrant_url)),
        sync=SyncSettings(**_given(catalog=args.catalog, allow_delete=args.allow_delete)),
        auth=AuthSettings(**_given(allow_unauthenticated=getattr(args, "allow_unauthenticated", None))),
        server=ServerSettings(
            **_given(
                host=getattr(args, "host", None),
                port=getattr(args, "port", None),
                log_level=args.log_level,
                log_format=args.log_format,
            )
        ),
    )


def _bar(label: str, total: int) -> Progress:
    from tqdm import tqdm

    bar = tqdm(total=total, desc=f"embedding {label}", unit="fn", file=sys.stderr, leave=True)

    def update(done: int, total: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


def serve(settings: Settings) -> int:
    """Run the API server until interrupted."""
    import uvicorn

    catalog = settings.sync.catalog
    if catalog is not None and not catalog.is_dir():
        print(f"router serve: catalog directory {catalog} does not exist", file=sys.stderr)
        return 2
    summary, allowed = exposure(settings.server.host, settings.auth)
    if not allowed:
        print(f"router serve: {summary}", file=sys.stderr)
        return 2
    exposed = settings.auth.keys is None and not is_loopback(settings.server.host)
    log.log(logging.WARNING if exposed else logging.INFO, summary)

    from router.app import create_app

    uvicorn.run(
        create_app(settings),
        host=settings.server.host,
        port=settings.server.port,
        log_config=None,
        log_level=settings.server.log_level,
        access_log=False,
    )
    return 0


async def sync(settings: Settings, *, watch: bool) -> int:
    """Reconcile the catalog directory once (or keep watching); 1 when a file was rejected."""
    from router.runtime import Runtime
    from sync.worker import DirectorySync

    catalog = settings.sync.catalog
    if catalog is None or not catalog.is_dir():
        print(f"router sync: catalog directory {catalog} does not exist", file=sys.stderr)
        return 2
    # The runtime's own directory watcher stays off: this command drives the worker itself.
    settings.sync = settings.sync.model_copy(update={"catalog": None})
    runtime = Runtime(settings, progress=_bar)
    await runtime.start()
    try:
        service = runtime.service
        await service.rebuild()
        worker = DirectorySync(service, catalog, allow_delete=settings.sync.allow_delete)
        if watch:
            await worker.watch(debounce_ms=settings.sync.debounce_ms)
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``router`` command."""
    args = parser().parse_args(argv)
    if args.command == "mcp":
        return mcp_cli.run(args)
    try:
        settings = settings_from(args)
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        print(f"router: invalid settings: {problems}", file=sys.stderr)
        return 2
    logs.configure(settings.server.log_level, settings.server.log_format)
    if args.command == "serve":
        return serve(settings)
    try:
        return asyncio.run(sync(settings, watch=args.watch))
    except KeyboardInterrupt:
        return 130
    except (RouterError, StorageUnavailable, OSError) as exc:
        print(f"router sync: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
