"""The connection a client sends its calls on, blocking or asyncio: retries, the answer read,
and whether the sidecar is up to answer (its health and readiness).

Both clients inherit their connection. What to do after each try (``_Tries``) and when to stop
waiting for readiness (``_Deadline``) are decided in one place, so the two only differ in how
they wait.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace
from types import TracebackType
from typing import Any, Generic, Self, TypeVar

import httpx

from router.client import _calls as calls
from router.client._calls import Call
from router.client._errors import TransportError, UnavailableError
from router.client._models import Health
from router.client._retry import NO_RETRY, Attempts, RetryPolicy

T = TypeVar("T")
HttpT = TypeVar("HttpT", httpx.Client, httpx.AsyncClient)
log = logging.getLogger("router.client")


class _Tries:
    """The tries of one call: after each, how long to wait before the next one, logged."""

    def __init__(self, call: Call[Any], policy: RetryPolicy, base_url: httpx.URL) -> None:
        self._call = call
        self._attempts = Attempts(policy if call.retry else NO_RETRY, repeatable=call.repeatable)
        self._base_url = str(base_url).rstrip("/")

    def after_error(self, exc: httpx.TransportError) -> float:
        """Seconds to wait after ``exc``; raises ``TransportError`` when no try is left."""
        call = self._call
        wait = self._attempts.after_error(exc)
        if wait is None:
            # The address is said: a client made with the default URL may not be calling the router meant.
            where = f"{self._base_url}{call.path}"
            raise TransportError(f"{call.method} {where}: {type(exc).__name__}: {exc}") from exc
        log.info("retrying", extra={"path": call.path, "error": type(exc).__name__, "wait": wait})
        return wait

    def after_response(self, response: httpx.Response) -> float | None:
        """Seconds to wait after ``response``; None when it is the answer."""
        wait = self._attempts.after_response(response)
        if wait is not None:
            log.info("retrying", extra={"path": self._call.path, "status": response.status_code, "wait": wait})
        return wait


class _Deadline:
    """The end of a wait for the sidecar to be ready, ``max_wait`` seconds from now."""

    def __init__(self, max_wait: float) -> None:
        self._max_wait = max_wait
        self._end = time.monotonic() + max_wait

    def passed(self) -> bool:
        """Whether the wait is over."""
        return time.monotonic() >= self._end

    def readiness(self) -> calls.Call[Health]:
        """A readiness check that answers, or times out, by the end of the wait."""
        return replace(calls.readiness(), cap=max(self._end - time.monotonic(), 0.01))

    def ready(self, health: Health) -> bool:
        """Whether ``health`` says ready; raises ``UnavailableError`` once the wait is over without it."""
        if health.ready:
            return True
        if self.passed():
            raise UnavailableError(503, "NotReady", f"not ready after {self._max_wait}s: {health.checks}")
        return False


class _Connection(Generic[HttpT]):
    """What either connection holds.

    Args:
        http: the HTTP client, its base URL, timeout and headers set (the client builds it).
        retry: when and how requests are tried again.
    """

    def __init__(self, http: HttpT, retry: RetryPolicy | None) -> None:
        self.retry = retry or RetryPolicy()
        self._http: HttpT = http

    @property
    def base_url(self) -> str:
        """Where the sidecar listens."""
        return str(self._http.base_url)

    @property
    def headers(self) -> dict[str, str]:
        """The headers sent with every request (the API key's among them), as a copy."""
        return dict(self._http.headers)


class Connection(_Connection[httpx.Client]):
    """A blocking connection to the sidecar: calls sent with retries, and its health."""

    def health(self) -> Health:
        """Liveness: the process answers."""
        return self._send(calls.health())

    def readiness(self) -> Health:
        """Readiness (model loaded, storage open, first sync done); never raises when not ready."""
        return self._send(calls.readiness())

    def status(self) -> dict[str, Any]:
        """``GET /v1/status`` as the sidecar answers it: catalogs, syncs, generation, storage, model, traffic."""
        return self._send(calls.status())

    def wait_ready(self, max_wait: float = 30.0, *, interval: float = 0.1) -> Health:
        """Wait until the sidecar is ready to route.

        Raises:
            UnavailableError: it answered but was not ready within ``max_wait`` seconds.
            TransportError: it could not be reached within ``max_wait`` seconds.
        """
        deadline = _Deadline(max_wait)
        while True:
            try:
                health = self._send(deadline.readiness())
            except TransportError:
                if deadline.passed():
                    raise
            else:
                if deadline.ready(health):
                    return health
            time.sleep(interval)

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        tries = _Tries(call, self.retry, self._http.base_url)
        while True:
            try:
                response = self._http.request(
                    call.method, call.path, json=call.body, timeout=calls.timeout(call, self._http.timeout)
                )
            except httpx.TransportError as exc:
                time.sleep(tries.after_error(exc))
                continue
            wait = tries.after_response(response)
            if wait is None:
                return calls.read(call, response)
            time.sleep(wait)


class AsyncConnection(_Connection[httpx.AsyncClient]):
    """An asyncio connection to the sidecar: calls sent with retries, and its health."""

    async def health(self) -> Health:
        """Liveness: the process answers."""
        return await self._send(calls.health())

    async def readiness(self) -> Health:
        """Readiness (model loaded, storage open, first sync done); never raises when not ready."""
        return await self._send(calls.readiness())

    async def status(self) -> dict[str, Any]:
        """``GET /v1/status`` as the sidecar answers it: catalogs, syncs, generation, storage, model, traffic."""
        return await self._send(calls.status())

    async def wait_ready(self, max_wait: float = 30.0, *, interval: float = 0.1) -> Health:
        """Wait until the sidecar is ready to route (``UnavailableError``/``TransportError`` after ``max_wait``)."""
        deadline = _Deadline(max_wait)
        while True:
            try:
                health = await self._send(deadline.readiness())
            except TransportError:
                if deadline.passed():
                    raise
            else:
                if deadline.ready(health):
                    return health
            await asyncio.sleep(interval)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _send(self, call: Call[T]) -> T:
        tries = _Tries(call, self.retry, self._http.base_url)
        while True:
            try:
                response = await self._http.request(
                    call.method, call.path, json=call.body, timeout=calls.timeout(call, self._http.timeout)
                )
            except httpx.TransportError as exc:
                await asyncio.sleep(tries.after_error(exc))
                continue
            wait = tries.after_response(response)
            if wait is None:
                return calls.read(call, response)
            await asyncio.sleep(wait)
