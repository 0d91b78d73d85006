"""Load on a running server: sequential routes beside bare encodes, concurrent clients, catalog PUTs.

Every loop is bounded twice: by the number of items it is given and by a deadline.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import httpx
from tqdm import tqdm

from benchmarks.perf_floor import BareModel
from benchmarks.perf_http import LeanClient
from benchmarks.perf_server import LogProgress, Server

__all__ = [
    "Latency",
    "client",
    "lean_client",
    "put_catalog",
    "route_body",
    "sequential",
    "throughput",
]

# An ONNX Runtime thread pool spins for a moment after each run: let the other process's settle.
SETTLE = 0.01
REQUEST_TIMEOUT = 120.0


def route_body(namespace: str, text: str) -> dict[str, object]:
    """A route request for one new user turn, no session (the context is the turn's text)."""
    return {"namespace": namespace, "messages": [{"role": "user", "content": text}]}


def client(server: Server, *, connections: int = 64, timeout: float = REQUEST_TIMEOUT) -> httpx.AsyncClient:
    """An HTTP client for ``server`` keeping ``connections`` keep-alive connections."""
    # Idle connections are dropped before uvicorn's 5 s keep-alive closes them under a request in flight.
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=2.0)
    return httpx.AsyncClient(base_url=server.url, timeout=timeout, limits=limits)


def lean_client(server: Server, *, connections: int = 64) -> LeanClient:
    """The load generator's client for ``server`` (``benchmarks.perf_http``: little CPU of its own)."""
    return LeanClient(server.url, connections=connections, timeout=REQUEST_TIMEOUT)


@dataclass(frozen=True)
class Latency:
    """Paired seconds: each route beside the bare encode of the context it embedded.

    ``cached`` and ``cached_httpx`` are the same texts routed again, their query vectors cached
    by then (what a route spends beside its encode), through this client and through httpx.
    """

    route: list[float]
    encode: list[float]
    cached: list[float]
    cached_httpx: list[float]

    def quantile(self, values: Sequence[float], q: float) -> float:
        """The ``q`` quantile (0.5 for the median) of ``values``."""
        ordered = sorted(values)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    @property
    def pair_ratio(self) -> float:
        """The median of route/encode over pairs: robust to load that drifts during the run."""
        return statistics.median(r / e for r, e in zip(self.route, self.encode, strict=True))


async def sequential(
    http: LeanClient,
    compare: httpx.AsyncClient,
    bare: BareModel,
    namespace: str,
    texts: Sequence[str],
    *,
    deadline: float,
) -> Latency:
    """Route ``texts`` one at a time; after each, encode the context it returned with the bare library, here.

    The two alternate which goes first, so a drift of the machine's load weighs on both alike.
    Each text is then routed again through ``http`` and through ``compare``: its query vector is
    cached by then, so what is timed is the route beside its encode, the client's share included.
    """
    route: list[float] = []
    encode: list[float] = []
    cached: dict[bool, list[float]] = {False: [], True: []}
    bare.encode(list(texts[:8]))  # warm-up: the first runs allocate
    for i, text in enumerate(tqdm(texts, desc="sequential routes", unit="q", leave=False)):
        if time.monotonic() > deadline:
            break
        body = route_body(namespace, text)
        bare_first = i % 2 == 1
        if bare_first:
            encode.append(bare.one(text))
            await asyncio.sleep(SETTLE)
        start = time.perf_counter()
        answer = await http.post("/v1/route", json=body)
        route.append(time.perf_counter() - start)
        answer.raise_for_status()
        context = answer.json()["context"]
        if context != text.strip():
            raise RuntimeError(f"the route embedded {context!r}, not the turn's text")
        await asyncio.sleep(SETTLE)
        if not bare_first:
            encode.append(bare.one(context))
        for through_httpx in (False, True) if bare_first else (True, False):
            start = time.perf_counter()
            again = await (compare if through_httpx else http).post("/v1/route", json=body)
            cached[through_httpx].append(time.perf_counter() - start)
            again.raise_for_status()
            await asyncio.sleep(SETTLE)
    return Latency(route, encode, cached[False], cached[True])


async def throughput(
    http: LeanClient, namespace: str, texts: Sequence[str], *, clients: int, deadline: float
) -> tuple[int, float]:
    """``clients`` concurrent clients route ``texts`` (each once) as fast as answers come.

    Returns:
        Requests answered and the seconds they took, from the first sent to the last answered.
    """
    pending = iter(texts)
    done = [0]

    async def worker() -> None:
        for text in pending:
            if time.monotonic() > deadline:
                return
            answer = await http.post("/v1/route", json=route_body(namespace, text))
            answer.raise_for_status()
            done[0] += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return done[0], time.perf_counter() - start


async def put_catalog(http: httpx.AsyncClient, server: Server, namespace: str, body: bytes, *, label: str) -> float:
    """``PUT /v1/catalogs/{namespace}`` with a JSON body already serialised; seconds until answered.

    While a large catalog embeds, the server's progress log lines drive a progress bar.
    """
    progress = LogProgress(server.log)
    headers = {"content-type": "application/json"}
    start = time.perf_counter()
    request = asyncio.create_task(http.put(f"/v1/catalogs/{namespace}", content=body, headers=headers))
    bar: tqdm[None] | None = None
    while not request.done():
        await asyncio.wait({request}, timeout=2.0)
        latest = progress.latest()
        if latest is not None:
            bar = bar or tqdm(total=latest[1], desc=label, unit="fn", leave=False)
            bar.update(latest[0] - bar.n)
    seconds = time.perf_counter() - start
    if bar is not None:
        bar.close()
    answer = request.result()
    answer.raise_for_status()
    return seconds
