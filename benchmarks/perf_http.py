"""A lean HTTP/1.1 keep-alive client, to load a server that shares this machine's cores.

A load generator's own CPU is taken from the server it measures when both run on the same two
cores, and its own latency is added to every route. httpx spends about 2 ms of Python per
request: a ``GET /healthz`` answered by the same server takes 3.5 ms through httpx and 1.6 ms
through the standard library's ``http.client``. This client writes a request and reads a
``Content-Length`` or chunked answer over asyncio streams, and does nothing else; the benchmark
still routes the same texts through httpx beside it, so both figures are in the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

__all__ = ["Answer", "LeanClient"]

# Idle connections are dropped before uvicorn's 5 s keep-alive closes them under a request.
_IDLE = 2.0


@dataclass(frozen=True)
class Answer:
    """A response: its status and body."""

    status: int
    body: bytes

    def json(self) -> Any:
        """The body decoded as JSON."""
        return orjson.loads(self.body)

    def raise_for_status(self) -> None:
        """Raise for a 4xx or 5xx status, with the start of the body."""
        if self.status >= 400:
            raise RuntimeError(f"HTTP {self.status}: {self.body[:300]!r}")


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.used = time.monotonic()

    async def exchange(self, head: bytes, body: bytes) -> tuple[Answer, bool]:
        """Send one request; its answer, and whether the connection may be used again.

        Raises:
            _Unanswered: the connection was closed before any byte of an answer (a kept-alive
                connection the server had just dropped: the request can be sent again).
        """
        self.writer.write(head + body)
        try:
            await self.writer.drain()
            status_line = await self.reader.readline()
        except ConnectionError as exc:
            raise _Unanswered(str(exc)) from exc
        if not status_line:
            raise _Unanswered("the server closed the connection")
        status = int(status_line.split()[1])
        headers: dict[str, str] = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if status < 200 or status in (204, 304):
            content = b""  # no body, whatever the headers say
        elif "content-length" in headers:
            content = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            content = await self._chunks()
        else:
            content = await self.reader.read()
            return Answer(status, content), False
        self.used = time.monotonic()
        return Answer(status, content), headers.get("connection", "").lower() != "close"

    async def _chunks(self) -> bytes:
        parts = []
        while size := int(await self._line(), 16):
            parts.append(await self.reader.readexactly(size))
            await self._line()
        while (await self.reader.readline()) not in (b"\r\n", b"\n", b""):
            pass  # trailers
        return b"".join(parts)

    async def _line(self) -> bytes:
        line = await self.reader.readline()
        if not line:
            raise ConnectionError("the server closed the connection inside a chunked body")
        return line.split(b";")[0].strip()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()

    def abort(self) -> None:
        """Drop the connection now, whatever is still buffered (a request that failed or timed out)."""
        self.writer.transport.abort()


class _Unanswered(ConnectionError):
    """A request the server closed the connection on before answering."""


class LeanClient:
    """Requests to one server over at most ``connections`` keep-alive connections.

    Args:
        url: the server's base URL (``http://host:port``).
        connections: the most connections open at once; a request waits for a free one.
        timeout: seconds a request may take.
    """

    def __init__(self, url: str, *, connections: int = 64, timeout: float = 120.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or parts.hostname is None or parts.port is None:
            raise ValueError(f"url: expected http://host:port, got {url!r}")
        self._host, self._port, self._timeout = parts.hostname, parts.port, timeout
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(connections)

    async def get(self, path: str) -> Answer:
        """``GET path``."""
        return await self._request("GET", path, b"")

    async def post(self, path: str, *, json: Any) -> Answer:
        """``POST path`` with ``json`` as its body."""
        return await self._request("POST", path, orjson.dumps(json))

    async def _request(self, method: str, path: str, body: bytes) -> Answer:
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self._host}:{self._port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode("latin-1")
        async with self._slots, asyncio.timeout(self._timeout):
            for attempt in range(2):
                connection, reused = await self._connection(fresh=attempt > 0)
                try:
                    answer, reusable = await connection.exchange(head, body)
                except _Unanswered:
                    connection.abort()
                    if reused and attempt == 0:
                        continue  # an idle connection the server dropped: once more on a new one
                    raise
                except BaseException:
                    connection.abort()
                    raise
                if reusable:
                    self._idle.append(connection)
                else:
                    await connection.close()
                return answer
        raise AssertionError("unreachable")  # pragma: no cover

    async def _connection(self, *, fresh: bool = False) -> tuple[_Connection, bool]:
        """A connection (a new one if ``fresh``), and whether it was kept alive from an earlier request."""
        while self._idle and not fresh:
            connection = self._idle.pop()
            if time.monotonic() - connection.used < _IDLE:
                return connection, True
            await connection.close()
        reader, writer = await asyncio.open_connection(self._host, self._port)
        return _Connection(reader, writer), False

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.close()

    async def __aenter__(self) -> LeanClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
