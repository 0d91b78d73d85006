"""An oversized body gets its 413 answer, read by urllib, httpx and requests, not a reset mid-upload.

uvicorn serves the app on 127.0.0.1; each body is far larger than the socket buffers, so a server
that answered and closed before reading it would reset the connection under the client's upload.
"""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
import uvicorn

from router.app import create_app
from router.catalog.limits import LimitSettings
from router.embedding import EmbedderPool
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings

pytestmark = pytest.mark.integration

LIMITS = LimitSettings(body_bytes=4096, catalog_bytes=64 * 1024, drain_bytes=64 * 1024 * 1024)
# 8 MiB: far more than a loopback socket's buffers hold while nobody reads.
BIG = json.dumps({"namespace": "travel", "messages": [{"role": "user", "content": "x" * (8 << 20)}]}).encode()
DETAIL = "request body: "
JSON = {"content-type": "application/json"}


class Live:
    """The app served by uvicorn on a free 127.0.0.1 port, in a background thread."""

    def __init__(self, root: Path, embedders: EmbedderPool, limits: LimitSettings, http: str = "auto") -> None:
        settings = Settings(storage=StorageSettings(data=root / "data"), sync=SyncSettings(catalog=None), limits=limits)
        app = create_app(runtime=Runtime(settings, embedders=embedders))
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, http=http, log_level="warning", lifespan="on"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]}, daemon=True)

    def __enter__(self) -> Live:
        self.thread.start()
        for _ in range(1200):
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            threading.Event().wait(0.1)
        raise RuntimeError("the server did not start")

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.socket.close()


# uvicorn parses with httptools when it is installed (a dependency), else with h11: both answer.
@pytest.fixture(scope="module", params=["httptools", "h11"])
def live(
    tmp_path_factory: pytest.TempPathFactory, embedders: EmbedderPool, request: pytest.FixtureRequest
) -> Iterator[Live]:
    with Live(tmp_path_factory.mktemp("oversized"), embedders, LIMITS, http=request.param) as server:
        yield server


def chunks(data: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def check(status: int, body: Any, headers: Any) -> None:
    assert status == 413
    assert body["error"] == "PayloadTooLarge"
    assert body["detail"].startswith(DETAIL)
    assert "ROUTER_LIMIT_BODY_BYTES" in body["detail"]
    assert body["request_id"]
    assert headers.get("connection", "").lower() == "close"


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
def test_urllib_reads_the_413(live: Live, streamed: bool) -> None:
    data: Any = chunks(BIG) if streamed else BIG
    headers = {"content-type": "application/json"}
    if not streamed:
        headers["content-length"] = str(len(BIG))
    request = urllib.request.Request(f"{live.url}/v1/route", data=data, headers=headers, method="POST")  # noqa: S310
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)  # noqa: S310
    check(refused.value.code, json.loads(refused.value.read()), refused.value.headers)


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
def test_httpx_reads_the_413(live: Live, streamed: bool) -> None:
    content: Any = chunks(BIG) if streamed else BIG
    answer = httpx.post(f"{live.url}/v1/route", content=content, headers=JSON, timeout=60)
    check(answer.status_code, answer.json(), answer.headers)


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
def test_requests_reads_the_413(live: Live, streamed: bool) -> None:
    data: Any = chunks(BIG) if streamed else BIG
    answer = requests.post(f"{live.url}/v1/route", data=data, headers=JSON, timeout=60)
    check(answer.status_code, answer.json(), answer.headers)


def test_the_server_serves_the_next_request_after_a_413(live: Live) -> None:
    with httpx.Client(base_url=live.url, timeout=60) as client:
        refused = client.post("/v1/route", content=BIG, headers={"content-type": "application/json"})
        assert refused.status_code == 413
        assert client.get("/healthz").status_code == 200
