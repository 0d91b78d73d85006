"""Serving an MCP server over stdio or streamable HTTP, in the session (handshake) era.

The stdio side is this module's own rather than the SDK's ``stdio_server``: that one reads
stdin in a worker thread which nothing can interrupt, so a router that fails to start, or
gets SIGTERM while the client keeps stdin open, would hang instead of exiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel.server import Server
from mcp.server.runner import serve_loop
from mcp.shared.message import SessionMessage

from router.server import listen

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
# How long the last answers may take to reach stdout once the session ends.
FLUSH_SECONDS = 5.0


def _read_lines(fd: int, loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[bytes]) -> None:
    # A daemon thread: blocked on a read, it never holds up the process's exit.
    with contextlib.suppress(RuntimeError), os.fdopen(fd, "rb", closefd=False) as stream:  # loop closed: done
        for line in stream:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, b"")


class _Output:
    """The protocol's stdout: one whole line at a time, whichever task writes it."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = anyio.Lock()

    async def write(self, message: types.JSONRPCMessage) -> None:
        data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        async with self._lock:
            await anyio.to_thread.run_sync(self._write_all, data)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]


def _unreadable(line: bytes) -> types.JSONRPCError | None:
    """JSON-RPC 2.0's answer to a line that is not a message: a parse error, or an invalid request.

    None for a response of the client's (it holds ``result`` or ``error``): answering it would
    read as the answer to a request of the client's own with that id.
    """
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return types.JSONRPCError(
            jsonrpc="2.0", id=None, error=types.ErrorData(code=types.PARSE_ERROR, message="Parse error: not JSON")
        )
    if isinstance(value, dict) and ("result" in value or "error" in value) and "method" not in value:
        return None
    given = value.get("id") if isinstance(value, dict) else None
    # An id the request gave (a string or an integer) names the answer; any other is unknown: null.
    known = given if isinstance(given, str) or (isinstance(given, int) and not isinstance(given, bool)) else None
    error = types.ErrorData(code=types.INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message")
    return types.JSONRPCError(jsonrpc="2.0", id=known, error=error)


@contextlib.contextmanager
def _claim_std_fds() -> Iterator[tuple[int, int]]:
    """Yield private copies of stdin and stdout; meanwhile fd 0 reads the null device and fd 1 writes to stderr."""
    sys.stdout.flush()
    protocol_in, protocol_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    try:
        yield protocol_in, protocol_out
    finally:
        sys.stdout.flush()
        os.dup2(protocol_in, 0)
        os.dup2(protocol_out, 1)
        os.close(protocol_out)
        # protocol_in stays open: the reader thread may still be blocked on it.


async def _pump_in(
    lines: asyncio.Queue[bytes], sink: MemoryObjectSendStream[SessionMessage | Exception], out: _Output
) -> None:
    async with sink:
        while line := await lines.get():
            if not line.strip():
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except (ValueError, RecursionError):
                # The session would drop the line unseen: the client is told, as JSON-RPC 2.0 asks.
                answer = _unreadable(line)
                shown = line[:200].decode(errors="replace").strip()
                log.warning("MCP message not understood", extra={"line": shown, "answered": answer is not None})
                if answer is not None:
                    with contextlib.suppress(OSError):  # the client closed its end
                        await out.write(answer)
                continue
            await sink.send(SessionMessage(message))


async def _pump_out(out: _Output, source: MemoryObjectReceiveStream[SessionMessage], done: anyio.Event) -> None:
    try:
        async with source:
            async for item in source:
                await out.write(item.message)
    except OSError:  # the client closed its end
        pass
    finally:
        done.set()


@contextlib.asynccontextmanager
async def stdio(server: Server[Any]) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """Claim stdin and stdout now; the yielded coroutine function serves one session on them.

    While claimed, anything written to file descriptor 1 (a library's stray print) goes to
    stderr, so enter this before loading models: stdout carries nothing but the protocol.
    ``Server.run`` would also accept the stateless 2026 era on the stream; the handshake-only
    loop keeps one session per connection, which the working set needs.
    """
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes] = asyncio.Queue()
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    written = anyio.Event()
    with _claim_std_fds() as (protocol_in, protocol_out):
        threading.Thread(target=_read_lines, args=(protocol_in, loop, lines), name="mcp-stdin", daemon=True).start()
        async with anyio.create_task_group() as tasks:
            out = _Output(protocol_out)
            tasks.start_soon(_pump_in, lines, read_send, out)
            tasks.start_soon(_pump_out, out, write_receive, written)

            async def serve() -> None:
                async with server.lifespan(server) as state:
                    options = server.create_initialization_options()
                    await serve_loop(server, read_receive, write_send, lifespan_state=state, init_options=options)

            try:
                yield serve
            finally:
                write_send.close()
                with anyio.move_on_after(FLUSH_SECONDS, shield=True):
                    await written.wait()
                tasks.cancel_scope.cancel()


class _Uvicorn(listen.Server):
    """Shuts down gracefully on SIGINT or SIGTERM and returns.

    uvicorn raises the signal again once it has stopped, which would end the process before
    the caller closes storage and upstream servers.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


async def serve_http(server: Server[Any], *, host: str, port: int, sockets: list[socket.socket] | None = None) -> None:
    """Serve streamable HTTP at ``http://host:port/mcp``, one session per ``Mcp-Session-Id``, until a signal.

    ``sockets``: bound beforehand (``router.server.listen.bind``), else bound here.
    """
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="on")
    await _Uvicorn(config).serve(sockets=sockets)
