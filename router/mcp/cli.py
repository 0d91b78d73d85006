"""``router mcp``: serve the router as an MCP server (stdio, or streamable HTTP with ``--http``).

Wired into ``router`` by ``add_parser``/``run``. The MCP
SDK and the model load only when the command runs, so ``router --help`` stays quick.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from router.catalog.functions import validate_namespace
from router.common import arguments
from router.common.errors import RouterError
from router.embedding import missing_model
from router.server import logs
from router.server.embedding_settings import EmbeddingSettings
from router.server.settings import ServerSettings, Settings, StorageSettings, SyncSettings, problems
from router.storage.base import StorageUnavailable

# Importing the MCP SDK takes a second or more: it is imported when `router mcp` runs, never
# when `router` only builds its parser.

log = logging.getLogger("router.mcp")
DEFAULT_PORT = 8001


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the flags of ``router mcp`` to ``parser``."""
    parser.add_argument(
        "--namespace",
        type=arguments.text,
        action="append",
        default=[],
        metavar="NS",
        help="catalog to search (repeatable)",
    )
    local = parser.add_argument_group("a router in this process (the default)")
    local.add_argument("--catalog", type=arguments.path, metavar="DIR", help="catalog directory to keep in sync")
    local.add_argument("--data", type=arguments.path, metavar="DIR", help="embedded storage directory (default ./data)")
    local.add_argument("--model", type=arguments.text, help="sentence-transformers model name or path")
    remote = parser.add_argument_group("a running router")
    remote.add_argument(
        "--url", type=arguments.text, metavar="URL", help="route through the HTTP API of the router at URL"
    )
    remote.add_argument(
        "--api-key",
        type=arguments.text,
        metavar="KEY",
        help="API key of the router at --url (default: the ROUTER_API_KEY variable)",
    )
    upstream = parser.add_argument_group("upstream MCP servers, each kept as a catalog")
    upstream.add_argument(
        "--upstream", action="append", default=[], metavar="NAME=CMD|URL", help="NAME=COMMAND [ARGS...] or NAME=URL"
    )
    upstream.add_argument("--upstreams", type=arguments.path, metavar="FILE", help="YAML/JSON file of upstream servers")
    upstream.add_argument("--resync-seconds", type=float, default=300.0, help="list upstream tools again this often")
    serving = parser.add_argument_group("serving")
    serving.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    serving.add_argument("--host", type=arguments.text, default="127.0.0.1", help="HTTP host (default 127.0.0.1)")
    serving.add_argument(
        "--port", type=arguments.port, default=DEFAULT_PORT, help=f"HTTP port (default {DEFAULT_PORT})"
    )
    serving.add_argument("--max-functions", type=int, metavar="N", help="functions find_tools returns by default")
    serving.add_argument("--working-set", type=int, default=20, metavar="N", help="found tools a session keeps")
    logs.add_flags(serving)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add the ``mcp`` command to ``router``'s subcommands."""
    parser = subparsers.add_parser(
        "mcp",
        help="serve the router as an MCP server (find_tools and a per-session working set)",
        description="Serve find_tools over MCP (stdio, or streamable HTTP with --http).",
    )
    configure(parser)
    return parser


def _given(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def options(args: argparse.Namespace) -> argparse.Namespace:
    """Validate the parsed flags; ``args`` with ``namespaces``, ``upstreams`` and ``settings`` added.

    Raises:
        ConfigError: saying which flag to change.
    """
    from router.mcp.config import ConfigError, load_upstreams, parse_upstream
    from sync.files import SUFFIXES

    if args.url and (args.catalog or args.data or args.model):
        raise ConfigError("--url routes through a running router; --catalog/--data/--model start one here: pick one")
    if args.api_key and not args.url:
        raise ConfigError("--api-key is the key of a running router: give its --url")
    if args.max_functions is not None and not 1 <= args.max_functions <= 128:
        raise ConfigError("--max-functions must be from 1 to 128")
    if args.working_set < 1:
        raise ConfigError("--working-set must be at least 1")
    upstreams = [parse_upstream(spec, resync_seconds=args.resync_seconds) for spec in args.upstream]
    if args.upstreams is not None:
        upstreams += load_upstreams(args.upstreams, resync_seconds=args.resync_seconds)
    try:
        namespaces = [validate_namespace(ns, source="--namespace") for ns in args.namespace]
    except RouterError as exc:
        raise ConfigError(exc.detail) from exc
    for attribute, label in (("name", "name"), ("target", "namespace")):
        values = [getattr(u, attribute) for u in upstreams]
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ConfigError(f"several upstreams use the {label} {repeated}; give each its own")
    namespaces = list(dict.fromkeys([*namespaces, *(u.target for u in upstreams)]))
    if not namespaces:
        raise ConfigError("give --namespace NS (the catalog to search) and/or --upstream servers")
    catalog: Path | None = args.catalog
    if catalog is not None and not catalog.is_dir():
        raise ConfigError(f"--catalog {catalog}: not a directory")
    for upstream in upstreams:
        clash = [catalog / f"{upstream.target}{s}" for s in SUFFIXES] if catalog else []
        if any(path.exists() for path in clash):
            raise ConfigError(
                f"upstream {upstream.name!r} fills namespace {upstream.target!r}, which {catalog} also defines; "
                "give the upstream another namespace"
            )
    try:
        args.settings = Settings(
            embedding=EmbeddingSettings(**_given(model=args.model)),
            storage=StorageSettings(**_given(data=args.data)),
            sync=SyncSettings(**_given(catalog=catalog)),
            server=ServerSettings(**_given(log_level=args.log_level, log_format=args.log_format)),
        )
    except (ValidationError, SettingsError) as exc:
        raise ConfigError(f"invalid settings: {problems(exc)}") from exc
    embedding = args.settings.embedding
    problem = None if args.url or embedding.remote else missing_model(embedding.model)
    if problem is not None:
        raise ConfigError(problem)
    args.namespaces, args.upstreams = namespaces, upstreams
    args.api_key = (args.api_key or os.environ.get("ROUTER_API_KEY") or None) if args.url else None
    return args


async def serve(opts: argparse.Namespace) -> int:
    """Start the backend and the upstream sources, then serve until the client leaves (stdio) or a signal."""
    from router.mcp.backends import Backend, EmbeddedBackend
    from router.mcp.remote import RemoteBackend
    from router.mcp.server import ToolRouterServer
    from router.mcp.transports import serve_http, stdio
    from sync.mcp_source import McpSources

    backend: Backend = (
        RemoteBackend(opts.url, api_key=opts.api_key, namespaces=opts.namespaces)
        if opts.url
        else EmbeddedBackend(opts.settings)
    )
    sources = McpSources(opts.upstreams, backend) if opts.upstreams else None
    router = ToolRouterServer(
        backend, opts.namespaces, sources=sources, max_functions=opts.max_functions, working_set=opts.working_set
    )
    async with contextlib.AsyncExitStack() as stack:
        # Claim stdout before anything loads, so that only the protocol ever reaches it.
        serve_stdio = None if opts.http else await stack.enter_async_context(stdio(router.server))
        stack.push_async_callback(backend.stop)  # also releases what a failed start opened
        try:
            await backend.start()
        except Exception as exc:
            detail = getattr(exc, "detail", None) or str(exc) or repr(exc)
            if isinstance(exc, StorageUnavailable) and opts.url is None:  # most often a router serve holds it
                detail += "; to search through the router that holds it, give router mcp its --url"
            log.error("cannot start the router", extra={"detail": detail})
            return 3
        if sources is not None:
            stack.push_async_callback(sources.stop)
            await sources.start()
        log.info("serving MCP", extra={"namespaces": opts.namespaces, "transport": "http" if opts.http else "stdio"})
        if serve_stdio is not None:
            # SIGTERM ends the session like SIGINT does: cancelled, then cleaned up.
            task = asyncio.current_task()
            if task is not None:
                asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
            await serve_stdio()
        else:
            await serve_http(router.server, host=opts.host, port=opts.port, sockets=opts.sockets)
    return 0


def run(args: argparse.Namespace) -> int:
    """Run ``router mcp`` with parsed flags; the exit status (2 for a configuration error)."""
    from router.mcp.config import ConfigError

    try:
        opts = options(args)
    except ConfigError as exc:
        print(f"router mcp: {exc}", file=sys.stderr)  # noqa: T201
        return 2
    opts.sockets = None
    if opts.http:  # before the model loads: a port in use is said at once
        from router.server import listen

        try:
            opts.sockets = listen.bind(opts.host, opts.port)
        except listen.ListenError as exc:
            print(f"router mcp: {exc}", file=sys.stderr)  # noqa: T201
            return exc.exit_code
    logs.configure(opts.settings.server.log_level, opts.settings.server.log_format)
    try:
        return asyncio.run(serve(opts))
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:  # SIGTERM
        return 0
    finally:
        for sock in opts.sockets or ():  # a start that failed never served on them
            sock.close()
