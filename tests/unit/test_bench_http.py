"""The benchmark's lean HTTP client against a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import uvicorn
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from benchmarks.perf_http import LeanClient

app = FastAPI()
ports: list[int] = []


@app.post("/echo")
async def echo(request: Request) -> JSONResponse:
    assert request.client is not None
    ports.append(request.client.port)
    body = await request.json()
    if "fail" in body:
        return JSONResponse({"detail": "bad"}, status_code=422)
    return JSONResponse({"got": body, "type": request.headers["content-type"]})


@app.get("/chunked")
async def chunked() -> StreamingResponse:
    async def parts() -> AsyncIterator[bytes]:
        for part in (b'{"a": ', b'"x" * 3', b"}"):
            yield part

    return StreamingResponse(parts(), media_type="application/json")


@app.delete("/echo")
async def forget() -> Response:
    return Response(status_code=204)


@app.get("/close")
async def close() -> JSONResponse:
    return JSONResponse({"closing": True}, headers={"connection": "close"})


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def test_json_goes_and_comes_back_over_one_kept_connection(url: str) -> None:
    async def run() -> list[object]:
        async with LeanClient(url) as http:
            answers = [await http.post("/echo", json={"n": i, "text": "é"}) for i in range(5)]
        return [a.json() for a in answers]

    ports.clear()
    assert asyncio.run(run()) == [{"got": {"n": i, "text": "é"}, "type": "application/json"} for i in range(5)]
    assert len(set(ports)) == 1


def test_concurrent_requests_use_at_most_the_connections_allowed(url: str) -> None:
    async def run() -> None:
        async with LeanClient(url, connections=3) as http:
            answers = await asyncio.gather(*(http.post("/echo", json={"n": i}) for i in range(30)))
        assert [a.json()["got"]["n"] for a in answers] == list(range(30))

    ports.clear()
    asyncio.run(run())
    assert len(ports) == 30
    assert len(set(ports)) <= 3


def test_a_chunked_answer_is_read_whole_and_the_connection_kept(url: str) -> None:
    async def run() -> tuple[bytes, bytes]:
        async with LeanClient(url) as http:
            first = await http.get("/chunked")
            second = await http.get("/chunked")
        return first.body, second.body

    assert asyncio.run(run()) == (b'{"a": "x" * 3}', b'{"a": "x" * 3}')


def test_an_error_status_raises_with_the_body_and_a_closed_connection_is_replaced(url: str) -> None:
    async def run() -> None:
        async with LeanClient(url) as http:
            failed = await http.post("/echo", json={"fail": True})
            assert failed.status == 422
            with pytest.raises(RuntimeError, match=r"HTTP 422.*bad"):
                failed.raise_for_status()
            assert (await http.get("/close")).json() == {"closing": True}
            assert (await http.post("/echo", json={"after": 1})).json()["got"] == {"after": 1}

    asyncio.run(run())


def test_a_url_without_a_port_is_refused() -> None:
    with pytest.raises(ValueError, match="url"):
        LeanClient("http://localhost")


def test_an_answer_without_a_body_does_not_wait_for_one(url: str) -> None:
    async def run() -> None:
        async with LeanClient(url, timeout=5) as http:
            answer = await http._request("DELETE", "/echo", b"")
            assert (answer.status, answer.body) == (204, b"")
            assert (await http.post("/echo", json={"after": 1})).json()["got"] == {"after": 1}

    asyncio.run(run())


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


async def _raw_server(
    answer: bytes, *, requests_per_connection: int, hold: float = 0.0
) -> tuple[asyncio.Server, str, list[int]]:
    """A server writing ``answer`` ``hold`` seconds after each request, closing each connection after so many."""
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        try:
            for _ in range(requests_per_connection):
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
                await asyncio.sleep(hold)
                writer.write(answer)
                await writer.drain()
        finally:
            writer.close()
            await writer.wait_closed()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", connections


def test_a_kept_connection_the_server_dropped_is_replaced_once() -> None:
    async def run() -> None:
        server, url, connections = await _raw_server(OK, requests_per_connection=1)
        async with server, LeanClient(url, timeout=5) as http:
            assert (await http.get("/")).body == b"{}"
            await asyncio.sleep(0.05)  # the server has closed the connection the client keeps
            assert (await http.get("/")).body == b"{}"
        assert len(connections) == 2

    asyncio.run(run())


@pytest.mark.parametrize(
    ("answer", "hold", "timeout", "error", "match"),
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n", 0.0, 5.0, ConnectionError, "chunked"),
        (b"", 1.0, 0.3, TimeoutError, None),  # no answer at all
    ],
)
def test_an_answer_cut_short_or_never_sent_is_an_error_not_a_hang(
    answer: bytes, hold: float, timeout: float, error: type[Exception], match: str | None
) -> None:
    async def run() -> None:
        server, url, _ = await _raw_server(answer, requests_per_connection=1, hold=hold)
        async with server, LeanClient(url, timeout=timeout) as http:
            with pytest.raises(error, match=match):
                await http.get("/")

    asyncio.run(run())


def test_a_retry_goes_over_a_new_connection_when_every_kept_one_was_dropped() -> None:
    async def run() -> None:
        server, url, connections = await _raw_server(OK, requests_per_connection=1)
        async with server, LeanClient(url, timeout=5) as http:
            assert all(a.body == b"{}" for a in await asyncio.gather(*(http.get("/") for _ in range(3))))
            await asyncio.sleep(0.05)  # all three kept connections are closed by now
            assert (await http.get("/")).body == b"{}"
        assert len(connections) == 4

    asyncio.run(run())
