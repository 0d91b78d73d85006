"""Embeddings from an OpenAI-compatible ``/embeddings`` service (OpenAI, Azure, Ollama, TEI, vLLM...).

Requests run on worker threads of one HTTP client (``concurrency`` at once), so the event loop
never waits on the network. A 429 or 5xx answer, a timeout or a refused connection is retried
with exponential backoff, after ``Retry-After`` when the service sends one; what still fails
raises ``EmbeddingUnavailable`` naming the service. Answers are checked before use: one vector
per text, in the order of ``index``, each of the expected dimension and finite. Vectors are
normalised here, as the local model's are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import httpx
import numpy as np

from router.embedding.answers import checked, reason, retry_after, tokens_counted
from router.embedding.base import Embedder, EncodeObserver, Progress, RequestObserver
from router.embedding.batching import QueryBatcher, Vectors
from router.embedding.endpoint import EmbeddingInvalid, EmbeddingUnavailable, Endpoint

log = logging.getLogger(__name__)
RETRIED = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
# A Retry-After longer than this is not waited for: the request fails and the caller retries later.
MAX_RETRY_AFTER = 60.0
# Texts given as queries: a usage example is a past request, searched by the turns' query vectors.
QUERY_KINDS = frozenset({"query", "example", "probe"})
# After a failure, readiness asks the service again at most this often (one short text each time).
CHECK_EVERY = 5.0


class RemoteEmbedder(Embedder):
    """An embedding model behind an OpenAI-compatible HTTP API.

    Args:
        endpoint: the service, the model and how texts are given to it.
        api_key: sent as a bearer token (``api-key`` header for Azure); never logged.
        api_version: Azure's ``api-version`` query parameter.
        dimension: the vectors' expected dimension; asked of the service (one short text) when None.
        recorded_dimension: the dimension of this model's vectors the store already holds: when
            ``dimension`` is None and the service cannot be asked, the embedder starts with it,
            failing (``failure`` says why) until the service answers again.
        batch_size: texts per request.
        concurrency: requests at once.
        timeout: seconds a request may take.
        retries: further attempts of a request that failed in a way worth retrying.
        backoff: seconds before the first retry without ``Retry-After``; doubles each time.
        cache_size: query vectors cached by exact text.
        transport: the HTTP transport (default: the network).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        api_key: str | None = None,
        api_version: str | None = None,
        dimension: int | None = None,
        recorded_dimension: int | None = None,
        batch_size: int = 64,
        concurrency: int = 4,
        timeout: float = 30.0,
        retries: int = 4,
        backoff: float = 0.5,
        cache_size: int = 4096,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if endpoint.provider == "azure" and not api_version:
            raise ValueError("an Azure OpenAI deployment needs an api-version (ROUTER_EMBEDDING_API_VERSION)")
        self.endpoint = endpoint
        self.model_name = endpoint.identity
        self.batch_size = batch_size
        self.concurrency = concurrency
        self._retries = retries
        self._backoff = backoff
        self.observers: list[EncodeObserver] = []
        self.request_observers: list[RequestObserver] = []
        self._closed = threading.Event()
        self.failure: str | None = None  # why the last request failed, until one succeeds
        self._checked_at = 0.0
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["api-key" if endpoint.provider == "azure" else "Authorization"] = (
                api_key if endpoint.provider == "azure" else f"Bearer {api_key}"
            )
        params = {"api-version": api_version} if endpoint.provider == "azure" and api_version else None
        self._http = httpx.Client(
            headers=headers,
            params=params,
            timeout=timeout,
            transport=transport,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="embed-remote")
        self._documents = asyncio.Semaphore(max(1, concurrency - 1))  # one request stays free for queries
        try:
            self.dimension = dimension if dimension is not None else self._probe(recorded_dimension)
        except BaseException:
            self.close()  # its threads and connections, since nothing will own it
            raise
        self._queries = QueryBatcher(
            self._encode_queries, dimension=self.dimension, lanes=concurrency, cache_size=cache_size
        )
        if self.failure is None:
            log.info("embedding service ready", extra={"service": endpoint.embeddings_url, "model": endpoint.model})

    def _probe(self, recorded: int | None) -> int:
        # An unset dimension: one short text tells it, and checks the service answers at all. A
        # service down must not keep the router from serving what the store holds of its model:
        # the stored vectors' dimension stands in, and answers are checked against it once it is back.
        try:
            vector = self._request(["dimension"], "probe", check_dimension=False)
        except EmbeddingUnavailable as exc:
            if recorded is None:
                raise
            log.warning(
                "embedding service unavailable at start; using the dimension of the stored vectors",
                extra={"service": self.endpoint.embeddings_url, "dimension": recorded, "detail": exc.detail},
            )
            return recorded
        return int(vector.shape[1])

    async def check(self) -> str | None:
        """None when the last request succeeded; after a failure, ask again (one short text, once per
        ``CHECK_EVERY`` seconds, no retry) so readiness comes back with the service."""
        if self.failure is None or time.monotonic() - self._checked_at < CHECK_EVERY:
            return self.failure
        self._checked_at = time.monotonic()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(EmbeddingUnavailable):  # the failure is kept in self.failure
            await loop.run_in_executor(self._pool, partial(self._request, ["ready"], "probe", attempts=1))
        return self.failure

    async def _encode_queries(self, texts: Sequence[str], alone: bool) -> Vectors:  # noqa: ARG002
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._request, list(texts), "query")

    def encode(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Document vectors on the calling thread, one request after another."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            out[start : start + self.batch_size] = self._request(list(texts[start : start + self.batch_size]), kind)
            if progress is not None:
                progress(min(start + self.batch_size, len(texts)), len(texts))
        return out

    async def embed(self, texts: Sequence[str], *, progress: Progress | None = None, kind: str = "catalog") -> Vectors:
        """Document vectors, ``concurrency - 1`` requests at once so queries keep a connection.

        A failed request fails the whole call: no text gets a vector unless every one does.
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        loop = asyncio.get_running_loop()
        done = 0

        async def one(start: int) -> None:
            nonlocal done
            batch = list(texts[start : start + self.batch_size])
            async with self._documents:
                out[start : start + len(batch)] = await loop.run_in_executor(self._pool, self._request, batch, kind)
            done += len(batch)
            if progress is not None:
                progress(done, len(texts))

        requests = [asyncio.create_task(one(start)) for start in range(0, len(texts), self.batch_size)]
        try:
            await asyncio.gather(*requests)
        except BaseException:
            for request in requests:
                request.cancel()
            await asyncio.gather(*requests, return_exceptions=True)
            raise
        return out

    async def query(self, texts: Sequence[str]) -> Vectors:
        """Query vectors through the cache; concurrent queries share requests."""
        return await self._queries.embed(texts)

    def describe(self) -> dict[str, Any]:
        """The provider, service URL, model, dimension, text options, concurrency and the last failure (no secret)."""
        endpoint = self.endpoint
        return {
            "provider": endpoint.provider,
            "url": endpoint.url,
            "model": endpoint.model,
            "dimension": self.dimension,
            "query_prefix": endpoint.query_prefix,
            "document_prefix": endpoint.document_prefix,
            "query_input_type": endpoint.query_input_type,
            "document_input_type": endpoint.document_input_type,
            "batch_size": self.batch_size,
            "concurrency": self.concurrency,
            "failure": self.failure,
        }

    def close(self) -> None:
        """Stop waiting retries, the worker threads and the connections."""
        self._closed.set()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()

    def _request(self, texts: list[str], kind: str, *, check_dimension: bool = True, attempts: int = 0) -> Vectors:
        """One request (retried as needed) for ``texts`` of ``kind``: their checked, normalised vectors."""
        endpoint = self.endpoint
        query = kind in QUERY_KINDS
        prefix = endpoint.query_prefix if query else endpoint.document_prefix
        body: dict[str, Any] = {"model": endpoint.model, "input": [prefix + t for t in texts]}
        input_type = endpoint.query_input_type if query else endpoint.document_input_type
        if input_type:
            body["input_type"] = input_type
        if endpoint.dimensions is not None:
            body["dimensions"] = endpoint.dimensions
        start = time.perf_counter()
        answer = self._post(body, kind, len(texts), attempts or self._retries + 1)
        vectors = self._vectors(answer, len(texts), check_dimension, kind)
        self.failure = None
        seconds = time.perf_counter() - start
        tokens = tokens_counted(answer)
        for observe_request in tuple(self.request_observers):
            observe_request(kind, "ok", len(texts), tokens)
        for observe in tuple(self.observers):
            observe(kind, len(texts), seconds)
        return vectors

    def _post(self, body: dict[str, Any], kind: str, count: int, attempts: int) -> Any:
        url, name = self.endpoint.embeddings_url, self.endpoint.describe()
        for attempt in range(attempts):
            if self._closed.is_set():
                raise EmbeddingUnavailable(f"{name}: the embedder is closed")
            wait: float | None = None
            try:
                response = self._http.post(url, json=body)
            except httpx.TimeoutException:
                problem = f"no answer within {self._http.timeout.read} s"
            except httpx.TransportError as exc:
                problem = f"cannot be reached ({type(exc).__name__}: {exc})"
            else:
                if response.status_code == 200:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise self._failed(
                            kind, count, EmbeddingInvalid(f"{name} answered 200 with a body that is not JSON")
                        ) from exc
                problem = f"answered HTTP {response.status_code}: {reason(response)}"
                if response.status_code not in RETRIED:
                    raise self._failed(kind, count, EmbeddingUnavailable(f"{name} {problem}"))
                wait = retry_after(response)
                if wait is not None and wait > MAX_RETRY_AFTER:
                    late = EmbeddingUnavailable(f"{name} {problem}; it asks to retry after {wait:.0f} s")
                    raise self._failed(kind, count, late)
            if attempt == attempts - 1:
                break
            delay = wait if wait is not None else self._backoff * 2**attempt
            for observe_request in tuple(self.request_observers):
                observe_request(kind, "retried", count, 0)
            log.warning(
                "embedding request failed; retrying",
                extra={"service": url, "problem": problem, "attempt": attempt + 1, "delay": round(delay, 3)},
            )
            self._closed.wait(delay)
        raise self._failed(kind, count, EmbeddingUnavailable(f"{name} {problem} (tried {attempts} times)"))

    def _failed(self, kind: str, count: int, error: EmbeddingUnavailable) -> EmbeddingUnavailable:
        """Count a failed request, remember why (for readiness), and give the error back to raise."""
        self.failure = error.detail
        for observe_request in tuple(self.request_observers):
            observe_request(kind, "failed", count, 0)
        return error

    def _vectors(self, answer: Any, count: int, check_dimension: bool, kind: str) -> Vectors:
        try:
            return checked(answer, count, self.dimension if check_dimension else None)
        except EmbeddingInvalid as exc:
            raise self._failed(kind, count, EmbeddingInvalid(f"{self.endpoint.describe()} {exc.detail}")) from None
