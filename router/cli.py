"""The ``router`` command: ``serve`` the API, ``sync`` a catalog directory, ``eval`` routing, ``migrate``, ``mcp``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsError

from router.api.keys import AuthSettings, exposure, is_loopback
from router.common import arguments
from router.common.errors import RouterError
from router.embedding import Progress, missing_model
from router.evaluate import command as eval_cli
from router.mcp import cli as mcp_cli
from router.retrieval.texts import TEMPLATES
from router.server import listen, logs, sync_command
from router.server.embedding_settings import EmbeddingSettings
from router.server.settings import ServerSettings, Settings, StorageSettings, SyncSettings, problems, variable
from router.storage.base import StorageUnavailable

log = logging.getLogger("router.cli")
S = TypeVar("S", bound=BaseSettings)


def _given(args: argparse.Namespace, *flags: str) -> dict[str, Any]:
    """Only the ``flags`` that were given, so unset flags leave environment settings alone."""
    values = {flag: getattr(args, flag, None) for flag in flags}
    return {k: v for k, v in values.items() if v not in (None, False)}


# The settings each flag sets, so that an error names the flag the user typed, not its variable.
_SECTIONS: dict[str, type[BaseSettings]] = {
    "data": StorageSettings,
    "qdrant_url": StorageSettings,
    "model": EmbeddingSettings,
    "text": EmbeddingSettings,
    "catalog": SyncSettings,
    "allow_delete": SyncSettings,
    "allow_unauthenticated": AuthSettings,
    "host": ServerSettings,
    "port": ServerSettings,
    "log_level": ServerSettings,
    "log_format": ServerSettings,
}


def _section(args: argparse.Namespace, section: type[S]) -> S:
    """``section``'s settings from the environment, with the flags given that set it."""
    return section(**_given(args, *(flag for flag, owner in _SECTIONS.items() if owner is section)))


def _flags(args: argparse.Namespace) -> dict[str, str]:
    """The variables the given flags set, each with its flag (``ROUTER_PORT`` -> ``--port``)."""
    return {variable(_SECTIONS[f], f): f"--{f.replace('_', '-')}" for f in _given(args, *_SECTIONS)}


def _common(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--data", type=arguments.path, help="embedded storage directory (default ./data)")
    where.add_argument("--qdrant-url", type=arguments.text, help="Qdrant server URL (server mode)")
    parser.add_argument(
        "--model",
        type=arguments.text,
        help="sentence-transformers model name or path, or a service's model with ROUTER_EMBEDDING_URL",
    )
    parser.add_argument(
        "--text",
        choices=sorted(TEMPLATES),
        help="function text template (default readable_schema)",
    )
    parser.add_argument("--allow-delete", action="store_true", help="let an emptied or removed file delete its catalog")
    logs.add_flags(parser)


def parser() -> argparse.ArgumentParser:
    """The command line."""
    root = argparse.ArgumentParser(prog="router", description="Contextual tool router: the functions that matter.")
    commands = root.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the HTTP API (and sync --catalog in the background)")
    serve.add_argument("--catalog", type=arguments.path, help="catalog directory to keep in sync")
    serve.add_argument("--host", type=arguments.text, help="address to listen on (default 127.0.0.1; ROUTER_HOST)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8000; ROUTER_PORT)")
    serve.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve without API keys on a host other than loopback (ROUTER_ALLOW_UNAUTHENTICATED)",
    )
    _common(serve)
    sync = commands.add_parser("sync", help="reconcile a catalog directory into storage")
    sync.add_argument("--catalog", type=arguments.path, help="catalog directory (ROUTER_SYNC_CATALOG)")
    sync.add_argument("--watch", action="store_true", help="keep running and apply every change")
    sync.add_argument(
        "--ready-file",
        type=arguments.path,
        help="with --watch: present while the last pass succeeded (for healthchecks)",
    )
    _common(sync)
    migrate = commands.add_parser("migrate", help="copy an embedded data directory to a Qdrant server")
    migrate.add_argument("--data", type=arguments.path, required=True, help="the embedded data directory (not in use)")
    migrate.add_argument(
        "--qdrant-url", type=arguments.text, required=True, help="the Qdrant server, or any node of a cluster"
    )
    migrate.add_argument("--batch", type=int, default=256, help="points per write (default 256)")
    migrate.add_argument(
        "--prune", action="store_true", help="delete points of the server's copies that the data directory lacks"
    )
    logs.add_flags(migrate)
    warm = commands.add_parser("warm", help="load the embedding model once and print what it runs on")
    warm.add_argument(
        "--model",
        type=arguments.text,
        help="sentence-transformers model name or path, or a service's model with ROUTER_EMBEDDING_URL",
    )
    logs.add_flags(warm)
    eval_cli.add_parser(commands)
    mcp_cli.add_parser(commands)
    return root


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, overridden by the flags given."""
    if args.command == "migrate":
        # --data is what to copy, not where this process keeps its storage: the server is.
        storage = StorageSettings(data=None, qdrant_url=args.qdrant_url)
    else:
        storage = _section(args, StorageSettings)
    return Settings(
        embedding=_section(args, EmbeddingSettings),
        storage=storage,
        sync=_section(args, SyncSettings),
        auth=_section(args, AuthSettings),
        server=_section(args, ServerSettings),
    )


def _bar(label: str, total: int, *, verb: str = "embedding", unit: str = "fn") -> Progress:
    from tqdm import tqdm

    # On a terminal only: elsewhere stderr holds the logs, one JSON object per line, which log progress themselves.
    quiet = not sys.stderr.isatty()
    bar = tqdm(total=total, desc=f"{verb} {label}".strip(), unit=unit, file=sys.stderr, leave=True, disable=quiet)

    def update(done: int, total: int) -> None:
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


def model_problem(settings: Settings) -> str | None:
    """Why a configured local model cannot be loaded, or None (a service's model is the service's to check)."""
    second = settings.multilingual
    if second.enabled and not second.remote and (problem := missing_model(second.model)):
        return f"ROUTER_MULTILINGUAL_MODEL: {problem}"
    return None if settings.embedding.remote else missing_model(settings.embedding.model)


def serve(settings: Settings) -> int:
    """Run the API server until interrupted."""
    import uvicorn

    catalog = settings.sync.catalog
    if catalog is not None and (problem := arguments.not_a_directory(catalog)):
        print(f"router serve: catalog directory {catalog} {problem}", file=sys.stderr)
        return 2
    summary, allowed = exposure(settings.server.host, settings.auth)
    if not allowed:
        print(f"router serve: {summary}", file=sys.stderr)
        return 2
    exposed = settings.auth.keys is None and not is_loopback(settings.server.host)
    if settings.storage.embedded:
        from router.storage.edge import check_free

        try:  # a held directory is said in one line, not in a start-up traceback
            check_free(settings.storage.data_dir())
        except StorageUnavailable as exc:
            print(f"router serve: {exc}", file=sys.stderr)
            return 3
    try:
        sockets = listen.bind(settings.server.host, settings.server.port)
    except listen.ListenError as exc:
        print(f"router serve: {exc}", file=sys.stderr)
        return exc.exit_code
    log.log(logging.WARNING if exposed else logging.INFO, summary)

    from router.app import create_app

    config = uvicorn.Config(
        create_app(settings),
        host=settings.server.host,
        port=settings.server.port,
        log_config=None,
        log_level=settings.server.log_level,
        access_log=False,
    )
    server = listen.Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=sockets)
    return 0 if server.started else 3  # the application did not start: its cause is logged


def warm(settings: Settings) -> int:
    """Load the embedding model once (offline), to check it loads and to have its files read."""
    from router.server.backends import embedder_loader

    embedder = embedder_loader(settings.embedding)(settings.embedding.identity)
    try:
        print(json.dumps(embedder.describe()))
    finally:
        embedder.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``router`` command."""
    args = parser().parse_args(argv)
    if args.command == "mcp":
        return mcp_cli.run(args)
    try:
        settings = settings_from(args)
    except (ValidationError, SettingsError) as exc:
        print(f"router: invalid settings: {problems(exc, flags=_flags(args))}", file=sys.stderr)
        return 2
    # A report's own output is what matters: its routine logs stay quiet unless asked for.
    quiet = args.command == "eval" and args.log_level is None
    logs.configure("warning" if quiet else settings.server.log_level, settings.server.log_format)
    problem = model_problem(settings) if args.command != "migrate" else None
    if problem is not None:  # said in one line, not in a start-up traceback
        print(f"router {args.command}: {problem}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return serve(settings)
    if args.command == "sync" and args.ready_file is not None:
        problem = sync_command.ready_problem(args.ready_file, watch=args.watch)
        if problem is not None:  # said before the model loads, not after the first pass
            print(f"router sync: {problem}", file=sys.stderr)
            return 2
    try:
        if args.command == "warm":
            return warm(settings)
        if args.command == "eval":
            steps = partial(_bar, verb="", unit="")
            return eval_cli.run(args, settings, progress=_bar, steps=steps)
        if args.command == "migrate":
            from router.server.migrate import command

            progress = partial(_bar, verb="copying", unit="pt")
            return command(settings.storage, args.data, batch=args.batch, prune=args.prune, progress=progress)
        return asyncio.run(sync_command.sync(settings, watch=args.watch, ready_file=args.ready_file, progress=_bar))
    except KeyboardInterrupt:
        return 130
    except (RouterError, StorageUnavailable, OSError) as exc:
        print(f"router {args.command}: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
