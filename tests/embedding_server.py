"""A small OpenAI-compatible ``/v1/embeddings`` server on 127.0.0.1, for tests of the remote provider.

Vectors are deterministic: each word of a text (and each of its character trigrams) adds a
signed count in a dimension chosen by its CRC, so texts that share words are close, as a real
model's would be, and every run gives the same vectors. Faults are injected per request,
first come first served: an HTTP status with or without ``Retry-After``, a delay longer than
the client waits, vectors of another dimension, data in the wrong order or of the wrong count.
``stop`` closes the socket (the service is down) and ``start`` opens it again on the same port.

Registered as a plugin by ``tests/conftest.py``: a test takes ``embedding_server`` for a running
server, of ``embedding_dimension`` (64; a module or a test overrides it for another).
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
import zlib
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

_WORDS = re.compile(r"\w+")


def hashed(text: str, dimension: int) -> list[float]:
    """The server's vector of ``text`` (not normalised)."""
    vector = np.full(dimension, 0.01, dtype=np.float64)
    words = _WORDS.findall(text.lower())
    grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
    for weight, features in ((1.0, words), (0.3, grams)):
        for feature in features:
            code = zlib.crc32(feature.encode())
            vector[code % dimension] += weight if code & 0x80000000 else -weight
    return [float(x) for x in vector]


@dataclass
class Fault:
    """What one request gets instead of a normal answer.

    Args:
        status: answer this HTTP status (with an OpenAI-style error body).
        retry_after: the ``Retry-After`` header, in seconds, with ``status``.
        delay: seconds to wait before answering normally (longer than the client's timeout: a timeout).
        dimension: answer vectors of this dimension.
        order: ``reversed`` (data in reverse order, each with its true ``index``), ``duplicate``
            (the last item's ``index`` repeats the first's) or ``missing`` (one vector short).
    """

    status: int | None = None
    retry_after: float | None = None
    delay: float = 0.0
    dimension: int | None = None
    order: str | None = None
    model: str | None = None


@dataclass
class Received:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class EmbeddingServer:
    """The server, its faults and what it received.

    Args:
        dimension: the vectors' dimension.
        model: the model id it serves (any ``model`` is accepted).
    """

    def __init__(self, *, dimension: int = 64, model: str = "hash-embed") -> None:
        self.dimension = dimension
        self.model = model
        self.faults: deque[Fault] = deque()
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self.port = 0

    @property
    def url(self) -> str:
        """The base URL (``/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> EmbeddingServer:
        """Listen (again, on the same port once it had one)."""
        owner = self

        class Handler(_Handler):
            server_owner = owner

        ThreadingHTTPServer.allow_reuse_address = True
        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="embedding-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop answering, close the socket and every open connection: connections are refused."""
        with self._lock:
            open_connections, self._connections = list(self._connections), set()
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def inject(self, *faults: Fault) -> None:
        """Queue faults for the next requests, one each."""
        with self._lock:
            self.faults.extend(faults)

    def texts(self) -> list[str]:
        """Every input text received, in order."""
        return [t for r in self.received for t in r.body.get("input", [])]

    def _next_fault(self, model: Any) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.model is None or fault.model == model:
                    self.faults.remove(fault)
                    return fault
            return None

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        """Status, headers and body for one request."""
        self.received.append(Received(path, headers, body))
        fault = self._next_fault(body.get("model")) or Fault()
        if fault.delay:
            time.sleep(fault.delay)
        if fault.status is not None:
            extra = {"Retry-After": f"{fault.retry_after:g}"} if fault.retry_after is not None else {}
            error = {"error": {"message": f"injected {fault.status}", "type": "server_error", "code": None}}
            return fault.status, extra, error
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts:
            return 400, {}, {"error": {"message": "'input' must be a non-empty list", "type": "invalid_request_error"}}
        dimension = fault.dimension or body.get("dimensions") or self.dimension
        data = [{"object": "embedding", "index": i, "embedding": hashed(t, dimension)} for i, t in enumerate(texts)]
        if fault.order == "reversed":
            data.reverse()
        elif fault.order == "duplicate":
            data[-1]["index"] = data[0]["index"]
        elif fault.order == "missing":
            data.pop()
        tokens = sum(len(_WORDS.findall(t)) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {}, {"object": "list", "data": data, "model": self.model, "usage": usage}


class _Handler(BaseHTTPRequestHandler):
    server_owner: EmbeddingServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        owner = self.server_owner
        with owner._lock:
            owner._connections.add(self.connection)

    def finish(self) -> None:
        with self.server_owner._lock:
            self.server_owner._connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.split("?")[0].rstrip("/").endswith("/embeddings"):
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra, answer = self.server_owner.answer(self.path, headers, body)
        else:
            status, extra, answer = 404, {}, {"error": {"message": "unknown route"}}
        payload = json.dumps(answer).encode()
        try:
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            pass


@pytest.fixture
def embedding_dimension() -> int:
    """The dimension of ``embedding_server``'s vectors."""
    return 64


@pytest.fixture
def embedding_server(embedding_dimension: int) -> Iterator[EmbeddingServer]:
    """A running server, stopped after the test (a test may stop and start it meanwhile)."""
    running = EmbeddingServer(dimension=embedding_dimension).start()
    yield running
    running.stop()
