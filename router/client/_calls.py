"""The requests of the HTTP API and how their answers are read, shared by both clients."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote, urlencode

import httpx

from router.client._catalog_models import (
    Catalog,
    CatalogChanges,
    CatalogInfo,
    CatalogTools,
    ListFormat,
    SearchFormat,
    ToolSearchResult,
    catalogs_from_json,
)
from router.client._errors import APIError, error_from_response
from router.client._example_models import ExamplesDeleted, UsageExamples
from router.client._miss_models import Misses
from router.client._models import Health, RouteResult, _object
from router.client._session_models import (
    MemoriesDeleted,
    SessionDeleted,
    StoredMemory,
    StoredMessages,
    memories_from_json,
    messages_from_json,
)

T = TypeVar("T")
Messages = str | Sequence[Mapping[str, Any]]
DEFAULT_URL = "http://127.0.0.1:8000"
# A catalog PUT answers once the sidecar has embedded what changed: 10,000 new functions take about
# 1.5 minutes on 2 CPU cores (README), so a request timeout made for routes cuts it short.
CATALOG_WAIT = 600.0


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and how to read its answer.

    Attributes:
        method: the HTTP method.
        path: the path, segments already quoted.
        parse: reads the JSON answer.
        body: the JSON body, if any.
        retry: whether the retry policy applies.
        repeatable: whether doing it twice does what doing it once does, so that it is sent again
            after a connection that dropped once the request had left (a 503 or a refused
            connection retries any call).
        accept: error statuses whose body is still the answer (``/readyz`` answers 503).
        wait: seconds to wait for the answer, when longer than the client's timeout.
        cap: seconds at most for the whole call's connecting and answer (a wait for readiness ends).
    """

    method: str
    path: str
    parse: Callable[[Any], T]
    body: dict[str, Any] | None = None
    retry: bool = True
    repeatable: bool = True
    accept: frozenset[int] = frozenset()
    wait: float | None = None
    cap: float | None = None


def headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    """Request headers: a bearer token when an API key is given, then the caller's own.

    Raises:
        ValueError: the key holds a space or a character a header cannot carry, never quoting it
            (sent, it failed each request with the key in the error's text).
    """
    result = {"accept": "application/json"}
    if api_key is not None:
        key = api_key.strip()  # read from a file, a key often ends with a newline
        if not key or any(not "\x21" <= c <= "\x7e" for c in key):
            raise ValueError("api_key: must be printable ASCII without spaces (as ROUTER_API_KEYS takes)")
        result["authorization"] = f"Bearer {key}"
    result.update(extra or {})
    return result


def timeout(call: Call[Any], client: httpx.Timeout) -> httpx.Timeout:
    """The timeout of ``call``: the client's, with a longer wait for the answer when the call needs one,
    and no part longer than its cap."""
    if call.cap is not None:
        parts = (client.connect, client.read, client.write, client.pool)
        connect, read, write, pool = (call.cap if p is None else min(p, call.cap) for p in parts)
        return httpx.Timeout(connect=connect, read=read, write=write, pool=pool)
    if call.wait is None or client.read is None or client.read >= call.wait:
        return client
    return httpx.Timeout(connect=client.connect, read=call.wait, write=client.write, pool=client.pool)


def read(call: Call[T], response: httpx.Response) -> T:
    """The typed answer, or the error the response stands for."""
    if not (response.is_success or response.status_code in call.accept):
        raise error_from_response(response)
    try:
        return call.parse(response.json())
    except (ValueError, TypeError, KeyError) as exc:
        raise APIError(response.status_code, "InvalidResponse", f"{call.method} {call.path}: {exc}") from exc


def _segment(value: str) -> str:
    if not value:  # "/v1/catalogs/" is another path: the sidecar answered it with a redirect
        raise ValueError("a namespace, session, user or id in the path must not be empty")
    if "/" in value:  # no id holds one: the sidecar refuses the path
        raise ValueError(f"a namespace, session, user or id in the path must not hold '/': {value!r}")
    return quote(value, safe="")


def _query(**params: str | int | None) -> str:
    """A query string of the parameters given (None: left out; "" is sent, for the sidecar to refuse)."""
    given = {k: v for k, v in params.items() if v is not None}
    return f"?{urlencode(given)}" if given else ""


def _messages(messages: Messages) -> list[dict[str, Any]]:
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    return [dict(m) for m in messages]


def _set(body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body.update({k: v for k, v in fields.items() if v is not None})
    return body


def route(
    namespace: str,
    messages: Messages,
    *,
    session_id: str | None,
    user_id: str | None,
    max_functions: int | None,
    recent_messages: int | None,
    min_score: float | None,
    pinned: Sequence[str],
    history_messages: int | None,
    explain: bool = False,
    defer_rest: bool = False,
    format: ListFormat | None = None,
) -> Call[RouteResult]:
    """``POST /v1/route``."""
    body = _set(
        {"namespace": namespace, "messages": _messages(messages)},
        session_id=session_id,
        user_id=user_id,
        max_functions=max_functions,
        recent_messages=recent_messages,
        min_score=min_score,
        history_messages=history_messages,
        pinned=list(pinned) or None,
        explain=explain or None,
        defer_rest=defer_rest or None,
        format=format,
    )
    return Call("POST", "/v1/route", RouteResult.from_json, body)


def tool_search(
    namespace: str | Sequence[str],
    query: str,
    *,
    format: SearchFormat,
    call_id: str | None,
    max_functions: int | None,
    session_id: str | None,
    user_id: str | None,
) -> Call[ToolSearchResult]:
    """``POST /v1/tool_search``."""
    namespaces = namespace if isinstance(namespace, str) else list(namespace)
    body = _set(
        {"namespace": namespaces, "query": query, "format": format},
        call_id=call_id,
        max_functions=max_functions,
        session_id=session_id,
        user_id=user_id,
    )
    return Call("POST", "/v1/tool_search", ToolSearchResult.from_json, body)


def tools(namespace: str, *, format: ListFormat, load: Sequence[str]) -> Call[CatalogTools]:
    """``GET /v1/catalogs/{namespace}/tools``."""
    query = urlencode([("format", format), *(("load", name) for name in load)])
    return Call("GET", f"/v1/catalogs/{_segment(namespace)}/tools?{query}", CatalogTools.from_json)


def add_messages(
    session_id: str, messages: Messages, *, user_id: str | None, namespace: str | None
) -> Call[StoredMessages]:
    """``POST /v1/sessions/{session_id}/messages``."""
    body = _set({"messages": _messages(messages)}, user_id=user_id, namespace=namespace)
    # Messages with ids are stored once however often they are posted; others would be stored again.
    repeatable = all(isinstance(i := m.get("id", m.get("message_id")), str) and i for m in body["messages"])
    path = f"/v1/sessions/{_segment(session_id)}/messages"
    return Call("POST", path, StoredMessages.from_json, body, repeatable=repeatable)


def get_messages(session_id: str, *, limit: int | None) -> Call[list[dict[str, Any]]]:
    """``GET /v1/sessions/{session_id}/messages``."""
    return Call("GET", f"/v1/sessions/{_segment(session_id)}/messages{_query(limit=limit)}", messages_from_json)


def delete_session(session_id: str) -> Call[SessionDeleted]:
    """``DELETE /v1/sessions/{session_id}``: not sent again once it left (a second try counts nothing)."""
    return Call("DELETE", f"/v1/sessions/{_segment(session_id)}", SessionDeleted.from_json, repeatable=False)


def list_memories(user_id: str, *, namespace: str | None, superseded: bool) -> Call[list[StoredMemory]]:
    """``GET /v1/users/{user_id}/memories``."""
    query = _query(namespace=namespace, include="superseded" if superseded else None)
    return Call("GET", f"/v1/users/{_segment(user_id)}/memories{query}", memories_from_json)


def delete_memory(user_id: str, memory_id: str) -> Call[MemoriesDeleted]:
    """``DELETE /v1/users/{user_id}/memories/{memory_id}``: not sent again once it left (a second try finds nothing)."""
    path = f"/v1/users/{_segment(user_id)}/memories/{_segment(memory_id)}"
    return Call("DELETE", path, MemoriesDeleted.from_json, repeatable=False)


def delete_memories(user_id: str, *, namespace: str | None) -> Call[MemoriesDeleted]:
    """``DELETE /v1/users/{user_id}/memories``."""
    path = f"/v1/users/{_segment(user_id)}/memories{_query(namespace=namespace)}"
    return Call("DELETE", path, MemoriesDeleted.from_json, repeatable=False)


def list_examples(
    namespace: str, *, function: str | None, limit: int | None, cursor: str | None
) -> Call[UsageExamples]:
    """``GET /v1/catalogs/{namespace}/examples``."""
    query = _query(function=function, limit=limit, cursor=cursor)
    return Call("GET", f"/v1/catalogs/{_segment(namespace)}/examples{query}", UsageExamples.from_json)


def delete_example(namespace: str, example_id: str) -> Call[ExamplesDeleted]:
    """``DELETE /v1/catalogs/{namespace}/examples/{id}``: not sent again once it left (a second try finds nothing)."""
    path = f"/v1/catalogs/{_segment(namespace)}/examples/{_segment(example_id)}"
    return Call("DELETE", path, ExamplesDeleted.from_json, repeatable=False)


def delete_examples(namespace: str, *, function: str | None) -> Call[ExamplesDeleted]:
    """``DELETE /v1/catalogs/{namespace}/examples``."""
    path = f"/v1/catalogs/{_segment(namespace)}/examples{_query(function=function)}"
    return Call("DELETE", path, ExamplesDeleted.from_json, repeatable=False)


def misses(namespace: str, *, limit: int | None) -> Call[Misses]:
    """``GET /v1/catalogs/{namespace}/misses``."""
    return Call("GET", f"/v1/catalogs/{_segment(namespace)}/misses{_query(limit=limit)}", Misses.from_json)


def list_catalogs() -> Call[list[CatalogInfo]]:
    """``GET /v1/catalogs``."""
    return Call("GET", "/v1/catalogs", catalogs_from_json)


def get_catalog(namespace: str) -> Call[Catalog]:
    """``GET /v1/catalogs/{namespace}``."""
    return Call("GET", f"/v1/catalogs/{_segment(namespace)}", Catalog.from_json)


def put_catalog(
    namespace: str, functions: Sequence[Mapping[str, Any]], *, pinned: Sequence[str], wait: float | None
) -> Call[CatalogChanges]:
    """``PUT /v1/catalogs/{namespace}``: answered once what changed is embedded (``CATALOG_WAIT`` by default)."""
    body = _set({"functions": [dict(f) for f in functions]}, pinned=list(pinned) or None)
    path = f"/v1/catalogs/{_segment(namespace)}"
    return Call("PUT", path, CatalogChanges.from_json, body, wait=CATALOG_WAIT if wait is None else wait)


def delete_catalog(namespace: str) -> Call[CatalogChanges]:
    """``DELETE /v1/catalogs/{namespace}``."""
    # Done twice, the second finds no catalog (404) and counts nothing: a dropped answer is not retried.
    return Call("DELETE", f"/v1/catalogs/{_segment(namespace)}", CatalogChanges.from_json, repeatable=False)


def status() -> Call[dict[str, Any]]:
    """``GET /v1/status``: the JSON as the sidecar answers it."""
    return Call("GET", "/v1/status", lambda body: dict(_object(body, "status")))


def health() -> Call[Health]:
    """``GET /healthz``."""
    return Call("GET", "/healthz", Health.from_json)


def readiness() -> Call[Health]:
    """``GET /readyz``: a 503 answer ("starting" or "unavailable") is a state, not an error, and is not retried."""
    return Call("GET", "/readyz", Health.from_json, retry=False, accept=frozenset({503}))
