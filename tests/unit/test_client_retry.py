"""The client's retries and error mapping, against ``httpx.MockTransport`` sidecars."""

from __future__ import annotations

import random
import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from router.client import (
    APIError,
    AsyncRouterClient,
    NotFoundError,
    RetryPolicy,
    RouterClient,
    TransportError,
    UnavailableError,
    ValidationError,
)
from router.client._retry import Attempts

FAST = RetryPolicy(attempts=3, backoff=0.001, max_backoff=0.002)
ROUTED = {
    "functions": [{"name": "search_flights", "description": "Search flights.", "score": 0.5, "parameters": {}}],
    "tools": [{"type": "function", "function": {"name": "search_flights"}}],
    "context": "Find a flight",
}


class Sidecar:
    """A scripted sidecar: answers (or raises) from a list, then repeats the last entry."""

    def __init__(self, *script: httpx.Response | Exception) -> None:
        self.script = list(script)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(step, Exception):
            raise step
        return step

    def client(self, policy: RetryPolicy = FAST, **options: Any) -> RouterClient:
        return RouterClient("http://sidecar", retry=policy, transport=httpx.MockTransport(self), **options)


def error(status: int, kind: str, detail: str) -> httpx.Response:
    return httpx.Response(status, json={"error": kind, "detail": detail})


def ok(body: dict[str, Any] = ROUTED) -> httpx.Response:
    return httpx.Response(200, json=body)


@pytest.fixture
def route() -> Iterator[Callable[[Sidecar], Any]]:
    clients: list[RouterClient] = []

    def call(sidecar: Sidecar) -> Any:
        client = sidecar.client()
        clients.append(client)
        return client.route("travel", "Find a flight")

    yield call
    for client in clients:
        client.close()


def test_503_is_retried_until_an_answer(route: Callable[[Sidecar], Any]) -> None:
    sidecar = Sidecar(error(503, "Unavailable", "starting"), error(503, "Unavailable", "starting"), ok())
    assert route(sidecar).names == ["search_flights"]
    assert len(sidecar.requests) == 3


def test_503_gives_up_after_the_attempts(route: Callable[[Sidecar], Any]) -> None:
    sidecar = Sidecar(error(503, "Unavailable", "no function index is ready yet"))
    with pytest.raises(UnavailableError) as caught:
        route(sidecar)
    assert (caught.value.status_code, caught.value.error) == (503, "Unavailable")
    assert caught.value.detail == "no function index is ready yet"
    assert len(sidecar.requests) == 3


@pytest.mark.parametrize(
    ("status", "kind", "raised"),
    [(404, "NamespaceNotFound", NotFoundError), (422, "ValidationError", ValidationError), (409, "Conflict", APIError)],
)
def test_4xx_is_never_retried(route: Callable[[Sidecar], Any], status: int, kind: str, raised: type[APIError]) -> None:
    sidecar = Sidecar(error(status, kind, "namespace: no catalog named 'travel'"), ok())
    with pytest.raises(raised) as caught:
        route(sidecar)
    assert type(caught.value) is raised
    assert (caught.value.status_code, caught.value.error) == (status, kind)
    assert caught.value.detail == "namespace: no catalog named 'travel'"
    assert len(sidecar.requests) == 1


@pytest.mark.parametrize(
    "failure", [httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError]
)
def test_connection_errors_are_retried(route: Callable[[Sidecar], Any], failure: type[httpx.TransportError]) -> None:
    sidecar = Sidecar(failure("refused"), failure("refused"), ok())
    assert route(sidecar).names == ["search_flights"]
    assert len(sidecar.requests) == 3


STORED = {"session_id": "s-1", "stored": 1, "memories_added": 0, "memories_updated": 0, "memories_expired": 0}
RUN = [{"role": "user", "content": "I live in Porto and want a hotel"}, {"role": "assistant", "content": "ok"}]


@pytest.mark.parametrize("failure", [httpx.RemoteProtocolError, httpx.ReadError])
def test_messages_without_ids_are_not_sent_again_once_they_left(failure: type[httpx.TransportError]) -> None:
    # The sidecar may have stored them before the connection dropped: sent again, they would be stored twice.
    sidecar = Sidecar(failure("dropped"), httpx.Response(200, json=STORED))
    with sidecar.client() as client, pytest.raises(TransportError, match=failure.__name__):
        client.add_messages("s-1", RUN)
    assert len(sidecar.requests) == 1


def test_messages_with_an_empty_id_are_not_sent_again_once_they_left() -> None:
    # The sidecar stores a message once per id only when the id says something.
    sidecar = Sidecar(httpx.RemoteProtocolError("dropped"), httpx.Response(200, json=STORED))
    with sidecar.client() as client, pytest.raises(TransportError):
        client.add_messages("s-1", [{**m, "id": ""} for m in RUN])
    assert len(sidecar.requests) == 1


def test_messages_with_ids_or_a_refused_connection_are_sent_again() -> None:
    with_ids = [{**m, "id": f"m{i}"} for i, m in enumerate(RUN)]
    sidecar = Sidecar(httpx.RemoteProtocolError("dropped"), httpx.Response(200, json=STORED))
    with sidecar.client() as client:
        assert client.add_messages("s-1", with_ids).stored == 1
    assert len(sidecar.requests) == 2
    sidecar = Sidecar(httpx.ConnectError("refused"), httpx.Response(200, json=STORED))
    with sidecar.client() as client:
        assert client.add_messages("s-1", RUN).stored == 1
    assert len(sidecar.requests) == 2


def test_a_delete_is_not_sent_again_once_it_left() -> None:
    # Done twice, the second would answer 404 for a delete that happened.
    sidecar = Sidecar(httpx.RemoteProtocolError("dropped"), error(404, "NamespaceNotFound", "no catalog"))
    with sidecar.client() as client, pytest.raises(TransportError, match="RemoteProtocolError"):
        client.delete_catalog("travel")
    assert len(sidecar.requests) == 1


def test_connection_errors_give_up_with_a_transport_error(route: Callable[[Sidecar], Any]) -> None:
    sidecar = Sidecar(httpx.ConnectError("connection refused"))
    with pytest.raises(TransportError, match="ConnectError: connection refused") as caught:
        route(sidecar)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert len(sidecar.requests) == 3


def test_a_read_timeout_is_not_retried(route: Callable[[Sidecar], Any]) -> None:
    sidecar = Sidecar(httpx.ReadTimeout("slow"), ok())
    with pytest.raises(TransportError, match="ReadTimeout"):
        route(sidecar)
    assert len(sidecar.requests) == 1


def test_total_time_is_bounded() -> None:
    sidecar = Sidecar(error(503, "Unavailable", "starting"))
    policy = RetryPolicy(attempts=100, backoff=0.02, max_backoff=0.02, max_elapsed=0.1)
    started = time.monotonic()
    with sidecar.client(policy) as client, pytest.raises(UnavailableError):
        client.route("travel", "Find a flight")
    assert time.monotonic() - started < 0.5
    assert 2 <= len(sidecar.requests) <= 11


def test_retries_can_be_turned_off() -> None:
    sidecar = Sidecar(error(503, "Unavailable", "starting"), ok())
    with sidecar.client(RetryPolicy(attempts=1)) as client, pytest.raises(UnavailableError):
        client.route("travel", "Find a flight")
    assert len(sidecar.requests) == 1


def test_backoff_grows_with_jitter_up_to_its_cap() -> None:
    policy = RetryPolicy(backoff=0.5, max_backoff=3.0)
    rng = random.Random(7)  # noqa: S311 - a seeded source for the jitter, not security
    for retry, cap in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)]:
        delays = [policy.delay(retry, rng=rng) for _ in range(200)]
        assert all(cap / 2 <= d <= cap for d in delays)
        assert max(delays) - min(delays) > cap / 4  # jittered, not fixed
    assert policy.delay(1, retry_after=1.5) == 1.5
    assert policy.delay(1, retry_after=10) == 10  # what the server asks, past the backoff's cap


def test_a_throttled_request_waits_as_long_as_it_is_told_within_max_elapsed() -> None:
    # A gateway answers 429 with Retry-After: 10; a 503 saying 10 s waits 10 s too, not 4 s.
    now = [0.0]
    throttled = httpx.Response(429, headers={"retry-after": "10"}, json={"error": "TooManyRequests", "detail": "slow"})
    attempts = Attempts(RetryPolicy(), clock=lambda: now[0])
    assert attempts.after_response(throttled) == 10
    assert Attempts(RetryPolicy(max_elapsed=5.0), clock=lambda: now[0]).after_response(throttled) is None
    sidecar = Sidecar(httpx.Response(429, headers={"retry-after": "0"}, json={"detail": "slow"}), ok())
    with sidecar.client() as client:
        assert client.route("travel", "Find a flight").names == ["search_flights"]
    assert len(sidecar.requests) == 2


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_a_retry_after_that_is_no_number_of_seconds_waits_the_backoff(value: str) -> None:
    # float() reads "nan": the client then slept NaN seconds, which raised ValueError.
    busy = httpx.Response(503, headers={"retry-after": value}, json={"error": "Unavailable", "detail": "busy"})
    wait = Attempts(RetryPolicy(backoff=0.5, max_backoff=0.5), clock=lambda: 0.0).after_response(busy)
    assert wait is not None
    assert 0.25 <= wait <= 0.5


def test_retry_after_is_honoured() -> None:
    busy = httpx.Response(503, headers={"retry-after": "0"}, json={"error": "Unavailable", "detail": "busy"})
    sidecar = Sidecar(busy, ok())
    with sidecar.client(RetryPolicy(backoff=5.0, max_backoff=5.0)) as client:
        started = time.monotonic()
        assert client.route("travel", "Find a flight").names == ["search_flights"]
    assert time.monotonic() - started < 1.0


def test_attempts_stop_when_the_next_wait_would_pass_max_elapsed() -> None:
    now = [0.0]
    attempts = Attempts(RetryPolicy(attempts=10, backoff=1.0, max_backoff=1.0, max_elapsed=2.5), clock=lambda: now[0])
    waits = []
    while (wait := attempts.after_error(httpx.ConnectError("refused"))) is not None:
        waits.append(wait)
        now[0] += wait
    assert 2 <= len(waits) <= 4
    assert sum(waits) <= 2.5
    assert attempts.after_error(ValueError("not a transport error")) is None


@pytest.mark.parametrize(
    ("options", "message"),
    [({"attempts": 0}, "at least 1"), ({"backoff": -1}, "negative"), ({"statuses": frozenset({409})}, "4xx")],
)
def test_policy_rejects_bad_settings(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RetryPolicy(**options)


def test_readiness_answers_starting_without_retrying() -> None:
    body = {"status": "starting", "checks": {"storage": True, "model": False, "first_sync": False}}
    sidecar = Sidecar(httpx.Response(503, json=body))
    with sidecar.client() as client:
        health = client.readiness()
    assert (health.ready, health.checks["model"]) == (False, False)
    assert len(sidecar.requests) == 1


def test_wait_ready_gives_up_after_max_wait() -> None:
    sidecar = Sidecar(httpx.Response(503, json={"status": "starting", "checks": {"model": False}}))
    with sidecar.client() as client, pytest.raises(UnavailableError, match="not ready"):
        client.wait_ready(0.05, interval=0.01)


def test_a_body_that_is_not_json_still_raises_a_typed_error() -> None:
    sidecar = Sidecar(httpx.Response(502, text="<html>bad gateway</html>"))
    with sidecar.client() as client, pytest.raises(APIError) as caught:
        client.list_catalogs()
    assert (caught.value.status_code, caught.value.error) == (502, "BadGateway")
    assert "bad gateway" in caught.value.detail


def test_an_unreadable_answer_is_an_invalid_response() -> None:
    sidecar = Sidecar(httpx.Response(200, json={"functions": "not a list"}))
    with sidecar.client() as client, pytest.raises(APIError) as caught:
        client.route("travel", "Find a flight")
    assert caught.value.error == "InvalidResponse"
    assert "functions" in caught.value.detail


def test_requests_carry_the_key_and_quote_path_segments() -> None:
    stored = {"session_id": "a b?c", "stored": 1, "memories_added": 0}
    sidecar = Sidecar(httpx.Response(200, json=stored))
    with sidecar.client(api_key="secret", headers={"x-trace": "1"}) as client:
        client.add_messages("a b?c", "I prefer aisle seats.", user_id="u-1")
    request = sidecar.requests[0]
    assert request.headers["authorization"] == "Bearer secret"
    assert request.headers["x-trace"] == "1"
    assert request.url.raw_path == b"/v1/sessions/a%20b%3Fc/messages"


def test_a_key_read_with_its_newline_is_sent_and_a_bad_one_is_refused_unquoted() -> None:
    sidecar = Sidecar(ok())
    with sidecar.client(api_key=" k-ops-3f9a1c7e5b2d4f6a\n") as client:
        client.route("travel", "Find a flight")
    assert sidecar.requests[0].headers["authorization"] == "Bearer k-ops-3f9a1c7e5b2d4f6a"
    for bad in ("k-ops 3f9a1c7e5b2d", "k-ops-\u00e9t\u00e9", "  "):
        with pytest.raises(ValueError, match="api_key") as caught:
            RouterClient("http://sidecar", api_key=bad)
        assert not bad.strip() or bad.strip() not in str(caught.value)


def test_a_catalog_put_waits_for_its_embedding_longer_than_a_route() -> None:
    # The sidecar answers a PUT once it has embedded what changed: minutes for 10,000 new functions.
    changes = {"namespace": "travel", "added": 1, "updated": 0, "removed": 0, "unchanged": 0}
    sidecar = Sidecar(ok(), httpx.Response(200, json=changes))
    with sidecar.client(timeout=5.0) as client:
        client.route("travel", "Find a flight")
        client.put_catalog("travel", [{"name": "search_flights", "description": "Search flights."}])
        client.put_catalog("travel", [{"name": "search_flights", "description": "Search flights."}], wait=1200)
    reads = [r.extensions["timeout"]["read"] for r in sidecar.requests]
    assert reads == [5.0, 600.0, 1200.0]
    assert {r.extensions["timeout"]["connect"] for r in sidecar.requests} == {5.0}


def test_an_empty_name_in_the_path_is_refused_before_sending() -> None:
    sidecar = Sidecar(ok())
    with sidecar.client() as client:
        for call in (lambda: client.get_catalog(""), lambda: client.get_messages(""), lambda: client.list_memories("")):
            with pytest.raises(ValueError, match="must not be empty"):
                call()
        with pytest.raises(ValueError, match="must not hold '/'"):
            client.delete_catalog("travel/examples")
    assert sidecar.requests == []


def test_query_parameters_are_sent_as_given_and_an_empty_namespace_is_not_dropped() -> None:
    # An empty namespace left out of the query listed or deleted the memories of every namespace.
    sidecar = Sidecar(ok({"user_id": "u", "memories": [], "deleted": 0, "session_id": "s", "messages": []}))
    with sidecar.client() as client:
        client.list_memories("u", namespace="", superseded=True)
        client.delete_memories("u", namespace="")
        client.list_memories("u", namespace="travel desk")
        client.get_messages("s", limit=5)
    assert [r.url.query.decode() for r in sidecar.requests] == [
        "namespace=&include=superseded",
        "namespace=",
        "namespace=travel+desk",
        "limit=5",
    ]


def test_waiting_for_readiness_ends_with_max_wait_though_nothing_answers() -> None:
    # A process that takes connections and never answers: each check ends with the wait, not the timeout.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with RouterClient(url, timeout=30.0) as client, pytest.raises(TransportError, match="Timeout"):
            client.wait_ready(max_wait=1.0)
        assert time.monotonic() - started < 5


async def test_the_async_client_retries_the_same_way() -> None:
    sidecar = Sidecar(httpx.ConnectError("refused"), error(503, "Unavailable", "starting"), ok())
    async with AsyncRouterClient("http://sidecar", retry=FAST, transport=httpx.MockTransport(sidecar)) as client:
        assert (await client.route("travel", "Find a flight")).names == ["search_flights"]
    assert len(sidecar.requests) == 3
    never = Sidecar(error(422, "ValidationError", "max_functions: too large"), ok())
    async with AsyncRouterClient("http://sidecar", retry=FAST, transport=httpx.MockTransport(never)) as client:
        with pytest.raises(ValidationError, match="max_functions"):
            await client.route("travel", "Find a flight", max_functions=1000)
    assert len(never.requests) == 1
