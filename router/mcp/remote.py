"""``router mcp --url``: a running router reached over its HTTP API, as a ``Backend``."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from router.catalog.functions import FunctionDef
from router.common.errors import Forbidden, InvalidRequest, NamespaceNotFound, RouterError, Unauthorized, Unavailable
from router.mcp.backends import Found, message

# A PUT answers once its catalog is embedded: minutes for 10,000 new functions on two cores.
PUT_WAIT_SECONDS = 600.0
_ERRORS: dict[int, type[RouterError]] = {
    error.status_code: error for error in (Unauthorized, Forbidden, NamespaceNotFound, InvalidRequest, Unavailable)
}


class RemoteBackend:
    """A running router reached over its HTTP API (``POST /v1/route``, ``PUT /v1/catalogs``).

    Args:
        url: the router's base URL, e.g. ``http://127.0.0.1:8000``.
        api_key: sent as ``Authorization: Bearer <api_key>`` when the router requires keys.
        namespaces: the catalogs this backend will search or fill, which the key must be allowed.
        client: an HTTP client to use instead of building one (closed by its owner).
        timeout: seconds allowed for each request (a catalog ``PUT`` may wait ``PUT_WAIT_SECONDS`` for its answer).
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        namespaces: Sequence[str] = (),
        client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.url = url.rstrip("/")
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._namespaces = list(namespaces)
        self._client = client or httpx.AsyncClient(base_url=self.url, timeout=timeout)
        self._owns_client = client is None

    async def start(self) -> None:
        """Check that the router answers and takes this backend's API key (or needs none) for its namespaces."""
        await self._request("GET", "/healthz")
        try:
            await self._request("GET", "/v1/catalogs")
            for namespace in self._namespaces:
                with contextlib.suppress(NamespaceNotFound):  # not written yet: a sync or an upstream fills it
                    await self._request("GET", f"/v1/catalogs/{namespace}")
        except Unauthorized as exc:
            advice = "is not valid" if self._headers else "is required: set ROUTER_API_KEY or --api-key"
            raise Unauthorized(f"the router at {self.url} refused the request: an API key {advice}") from exc
        except Forbidden as exc:
            raise Forbidden(f"the router at {self.url} refused the request: {exc.detail}") from exc
        except Unavailable:
            pass  # still starting: the key was accepted, or routes will say otherwise

    async def stop(self) -> None:
        """Close the HTTP client (when this backend made it)."""
        if self._owns_client:
            await self._client.aclose()

    async def _request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        # Reading the answer of a PUT waits for the embedding; connecting and sending are bounded as ever.
        bound = self._client.timeout
        timeout = (
            bound
            if method != "PUT"
            else httpx.Timeout(bound.connect, read=PUT_WAIT_SECONDS, write=bound.write, pool=bound.pool)
        )
        try:
            response = await self._client.request(
                method, f"{self.url}{path}", json=body, headers=self._headers, timeout=timeout
            )
        except httpx.HTTPError as exc:
            raise Unavailable(f"cannot reach the router at {self.url}: {exc!r}") from exc
        if response.is_success:
            return response.json()
        try:
            detail = str(response.json()["detail"])
        except (ValueError, KeyError, TypeError):
            detail = response.text[:500] or response.reason_phrase
        error = _ERRORS.get(response.status_code, RouterError)
        raise error(f"{method} {path}: {response.status_code} {detail}")

    async def route(self, namespace: str, query: str, *, max_functions: int | None) -> list[Found]:
        """Route ``query`` as a single user message, without history."""
        body: dict[str, Any] = {"namespace": namespace, "messages": message(query), "recent_messages": 0}
        if max_functions is not None:
            body["max_functions"] = max_functions
        answer = await self._request("POST", "/v1/route", body)
        return [
            Found(
                namespace,
                f["name"],
                f.get("description", ""),
                float(f["score"]),
                f.get("parameters", {}),
                bool(f.get("pinned", False)),
            )
            for f in answer["functions"]
        ]

    async def apply(self, namespace: str, functions: Sequence[FunctionDef], *, source: str) -> object:
        """Replace the catalog with ``PUT /v1/catalogs/{namespace}`` (the router records it as ``api``)."""
        del source  # the HTTP API records every catalog it receives as "api"
        return await self._request(
            "PUT", f"/v1/catalogs/{namespace}", {"functions": [dict(f.definition) for f in functions]}
        )
