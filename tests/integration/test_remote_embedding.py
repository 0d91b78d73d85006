"""The remote provider against a real OpenAI-compatible server on 127.0.0.1: vectors, retries, checks, costs."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import numpy as np
import pytest

from router.embedding import EmbeddingInvalid, EmbeddingUnavailable, Endpoint, RemoteEmbedder
from tests.embedding_server import EmbeddingServer, Fault, hashed

pytestmark = pytest.mark.integration

KEY = "sk-test-not-a-real-key-4242"
TEXTS = ["Find me a flight from Lisbon to Rome", "book a hotel in Porto", "ok", "what is the weather in Madrid"]


@pytest.fixture
def embedding_dimension() -> int:
    """The test server's vectors have 48 dimensions here."""
    return 48


def make(server: EmbeddingServer, **options: Any) -> RemoteEmbedder:
    """An embedder of ``server`` with short timeouts and backoff, so failures are quick."""
    endpoint = options.pop("endpoint", None) or Endpoint("openai", server.url, "hash-embed")
    defaults: dict[str, Any] = {"api_key": KEY, "timeout": 2.0, "retries": 2, "backoff": 0.05, "batch_size": 2}
    return RemoteEmbedder(endpoint, **(defaults | options))


def expected(texts: list[str], dimension: int = 48, prefix: str = "") -> np.ndarray:
    vectors = np.asarray([hashed(prefix + t, dimension) for t in texts], dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def test_documents_queries_and_scripts_get_the_services_vectors_in_order(
    embedding_server: EmbeddingServer,
) -> None:
    embedder = make(embedding_server)
    try:
        assert embedder.dimension == 48  # read from the first answer
        documents = await embedder.embed(TEXTS)
        queries = await embedder.query(TEXTS)
        for vectors in (documents, queries, embedder.encode(TEXTS)):
            assert vectors.dtype == np.float32
            np.testing.assert_allclose(vectors, expected(TEXTS), atol=1e-6)
        assert {len(r.body["input"]) for r in embedding_server.received[1:]} <= {1, 2, 3, 4}
        assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in embedding_server.received)
        assert all(r.body["model"] == "hash-embed" for r in embedding_server.received)
        assert "input_type" not in embedding_server.received[-1].body
        assert "dimensions" not in embedding_server.received[-1].body
    finally:
        embedder.close()


async def test_prefixes_and_input_types_go_to_queries_and_documents_apart(embedding_server: EmbeddingServer) -> None:
    endpoint = Endpoint(
        "openai",
        embedding_server.url,
        "e5",
        query_prefix="query: ",
        document_prefix="passage: ",
        query_input_type="query",
        document_input_type="passage",
    )
    embedder = make(embedding_server, endpoint=endpoint, dimension=48)
    try:
        documents = await embedder.embed(["book a hotel"])
        queries = await embedder.query(["book a hotel"])
        assert [(r.body["input"], r.body["input_type"]) for r in embedding_server.received] == [
            (["passage: book a hotel"], "passage"),
            (["query: book a hotel"], "query"),
        ]
        np.testing.assert_allclose(documents, expected(["book a hotel"], prefix="passage: "), atol=1e-6)
        np.testing.assert_allclose(queries, expected(["book a hotel"], prefix="query: "), atol=1e-6)
        assert not np.allclose(documents, queries)
    finally:
        embedder.close()


async def test_a_429_is_retried_after_the_retry_after_it_asks_for(embedding_server: EmbeddingServer) -> None:
    embedder = make(embedding_server, dimension=48)
    seen: list[tuple[str, str, int, int]] = []
    embedder.request_observers.append(lambda *event: seen.append(event))
    try:
        embedding_server.inject(Fault(status=429, retry_after=0.6))
        vectors = await embedder.embed(TEXTS[:2])
        np.testing.assert_allclose(vectors, expected(TEXTS[:2]), atol=1e-6)
        first, second = embedding_server.received
        assert second.at - first.at >= 0.55  # Retry-After, not the 0.05 s backoff
        assert [event[:3] for event in seen] == [("catalog", "retried", 2), ("catalog", "ok", 2)]
    finally:
        embedder.close()


async def test_5xx_and_timeouts_are_retried_with_backoff_then_fail_naming_the_service(
    embedding_server: EmbeddingServer,
) -> None:
    embedder = make(embedding_server, dimension=48, timeout=0.3)
    try:
        embedding_server.inject(Fault(status=503), Fault(delay=0.6))
        np.testing.assert_allclose(await embedder.query(["hello"]), expected(["hello"]), atol=1e-6)
        assert len(embedding_server.received) == 3
        embedding_server.inject(*[Fault(status=500)] * 3)
        with pytest.raises(EmbeddingUnavailable) as failed:
            await embedder.embed(["never embedded"])
        assert embedding_server.url in failed.value.detail
        assert "HTTP 500" in failed.value.detail
        assert "tried 3 times" in failed.value.detail
        assert failed.value.status_code == 503
        assert len(embedding_server.received) == 6
    finally:
        embedder.close()


async def test_a_refused_request_is_not_retried(embedding_server: EmbeddingServer) -> None:
    embedder = make(embedding_server, dimension=48)
    try:
        embedding_server.inject(Fault(status=401))
        with pytest.raises(EmbeddingUnavailable, match="HTTP 401: injected 401"):
            await embedder.embed(["x"])
        assert len(embedding_server.received) == 1
    finally:
        embedder.close()


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        (Fault(dimension=47), r"vectors of \[47\] dimensions, expected 48"),
        (Fault(order="missing"), "answered 1 vectors for 2 texts"),
        (Fault(order="duplicate"), r"data\[1\] with index 0"),
    ],
)
async def test_wrong_answers_are_refused(embedding_server: EmbeddingServer, fault: Fault, problem: str) -> None:
    embedder = make(embedding_server, dimension=48)
    try:
        embedding_server.inject(fault)
        with pytest.raises(EmbeddingInvalid, match=problem):
            await embedder.embed(TEXTS[:2])
        assert len(embedding_server.received) == 1  # a wrong answer is not retried: it would come back wrong
    finally:
        embedder.close()


async def test_data_out_of_order_is_put_back_by_index(embedding_server: EmbeddingServer) -> None:
    embedder = make(embedding_server, dimension=48, batch_size=4)
    try:
        embedding_server.inject(Fault(order="reversed"))
        np.testing.assert_allclose(await embedder.embed(TEXTS), expected(TEXTS), atol=1e-6)
    finally:
        embedder.close()


async def test_a_service_that_is_down_fails_at_once_with_its_address(embedding_server: EmbeddingServer) -> None:
    embedder = make(embedding_server, dimension=48, retries=1)
    embedding_server.stop()
    try:
        with pytest.raises(EmbeddingUnavailable, match="cannot be reached") as failed:
            await embedder.query(["anyone there"])
        assert embedding_server.url in failed.value.detail
        embedding_server.start()
        assert (await embedder.query(["anyone there"])).shape == (1, 48)  # a failure is not cached
    finally:
        embedder.close()


async def test_azure_sends_its_key_header_and_api_version(embedding_server: EmbeddingServer) -> None:
    endpoint = Endpoint("azure", embedding_server.url, "my-deployment")
    embedder = make(embedding_server, endpoint=endpoint, api_version="2024-02-01")
    try:
        await embedder.embed(["x"])
        request = embedding_server.received[-1]
        assert request.path.endswith("/embeddings?api-version=2024-02-01")
        assert request.headers["api-key"] == KEY
        assert "authorization" not in request.headers
    finally:
        embedder.close()


async def test_requested_dimensions_are_sent_and_checked(embedding_server: EmbeddingServer) -> None:
    endpoint = Endpoint("openai", embedding_server.url, "text-embedding-3-small", dimensions=16)
    embedder = make(embedding_server, endpoint=endpoint)
    try:
        assert embedder.dimension == 16
        assert (await embedder.embed(["x"])).shape == (1, 16)
        assert embedding_server.received[-1].body["dimensions"] == 16
    finally:
        embedder.close()


async def test_concurrent_queries_share_requests_and_tokens_are_counted_per_kind(
    embedding_server: EmbeddingServer,
) -> None:
    embedder = make(embedding_server, dimension=48, concurrency=1)
    seen: list[tuple[str, str, int, int]] = []
    embedder.request_observers.append(lambda *event: seen.append(event))
    try:
        embedding_server.inject(Fault(delay=0.3))  # the first query holds the one connection; the rest queue up
        texts = [f"query number {i}" for i in range(8)]
        together = await asyncio.gather(*(embedder.query([t]) for t in texts))
        np.testing.assert_allclose(np.concatenate(together), expected(texts), atol=1e-6)
        assert len(embedding_server.received) == 2
        await embedder.embed(["three words here"], kind="memory")
        tokens = {kind: sum(t for k, o, _, t in seen if k == kind and o == "ok") for kind in ("query", "memory")}
        assert tokens == {"query": 3 * 8, "memory": 3}
    finally:
        embedder.close()


async def test_the_key_never_appears_in_logs_or_errors(
    embedding_server: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    embedder = make(embedding_server, dimension=48, retries=1)
    try:
        embedding_server.inject(Fault(status=500), Fault(status=500))
        with pytest.raises(EmbeddingUnavailable) as failed:
            await embedder.embed(["x"])
        assert KEY not in failed.value.detail
        assert KEY not in repr(embedder.describe())
        assert all(KEY not in record.getMessage() and KEY not in str(record.__dict__) for record in caplog.records)
    finally:
        embedder.close()


@pytest.mark.parametrize("embedding_dimension", [8])
def test_closing_stops_a_retry_that_waits(embedding_server: EmbeddingServer) -> None:
    embedder = make(embedding_server, dimension=8, retries=3, backoff=30)
    embedding_server.inject(Fault(status=503))
    started = time.monotonic()
    failed: list[BaseException] = []

    def call() -> None:
        try:
            embedder.encode(["x"])
        except EmbeddingUnavailable as exc:
            failed.append(exc)

    import threading

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(0.3)
    embedder.close()
    worker.join(timeout=5)
    assert failed
    assert "closed" in str(failed[0])
    assert time.monotonic() - started < 5


def test_an_unset_dimension_is_asked_of_the_service_which_must_answer(embedding_server: EmbeddingServer) -> None:
    embedding_server.stop()
    with pytest.raises(EmbeddingUnavailable, match="cannot be reached") as failed:
        make(embedding_server, retries=0)
    assert embedding_server.url in failed.value.detail
    embedding_server.start()
    embedding_server.inject(Fault(dimension=12))
    embedder = make(embedding_server)
    try:
        assert embedder.dimension == 12  # the first answer's, then held to it
        with pytest.raises(EmbeddingInvalid, match="expected 12"):
            embedder.encode(["x"])
    finally:
        embedder.close()
