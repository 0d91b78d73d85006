"""Syncs, routes, throughput and memory of a real server at 1,000 and 10,000 functions, each beside its floor.

``python -m benchmarks.perf [--sizes 1000,10000]`` (``make bench-perf``). Per size, a BFCL-grown catalog
and ``router serve`` on an empty store, loaded through ``Connection`` (one keep-alive HTTP/1.1 connection
per client over asyncio streams: httpx spends about 2 ms of Python per request, which the server would
pay for on 2 shared cores). Every floor is the bare library (``harness.Bare``) in this run on the same texts:

1. full sync: ``PUT`` of the catalog (functions/s) against the bare batch encode of what the sync embeds
   (each function's text, and the parameter facets deduplicated per write chunk; at most
   ``--floor-texts`` of them, spread over their lengths);
2. route p50: distinct BFCL questions one at a time (no session) against the bare encode of each;
3. throughput with 1, 4, 16 and 64 clients over distinct questions (the server caches query vectors
   by text), beside the bare batching gain on the 16 clients' questions (batches of 4 or 16 against one per call);
4. one changed description, applied by a ``PUT`` of the whole catalog;
5. the server's RSS after ready and while 64 clients route (the most sampled);
6. route p50 again once the throughput questions were stored as runs (``POST /v1/sessions/{id}/messages``,
   each calling the functions BFCL expects), so that routes read usage examples and their votes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson
from tqdm import tqdm

from benchmarks.bfcl import BfclQuestion, load_questions
from benchmarks.catalogs import build_catalog, change_one
from benchmarks.harness import Bare, Header, Server, progress, record, say
from benchmarks.perf_report import CLIENTS, Size, report, table
from benchmarks.quality_runs import run_of
from router.catalog.functions import FunctionDef
from router.retrieval.texts import DEFAULT_TEMPLATE, parameter_facets, template

HEADING = "## Performance (make bench-perf)"
NAMESPACE = "bench"
# Between a route and a bare encode: the OpenMP threads of the process that just ran spin for a moment.
SETTLE = 0.01


class Connection:
    """One keep-alive HTTP/1.1 connection to the server; a client sends one request at a time."""

    def __init__(self, url: str, *, timeout: float | None = 120.0) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.timeout = parts.hostname or "127.0.0.1", parts.port or 80, timeout
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(self, method: str, path: str, body: Any = None) -> Any:
        """Send one request; its JSON answer (an error unless it is a 200)."""
        data = body if isinstance(body, bytes) else b"" if body is None else orjson.dumps(body)
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
        message = f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data
        async with asyncio.timeout(self.timeout):
            for attempt in (0, 1):  # once more on a new connection if the server closed an idle one
                if self.streams is None:
                    self.streams = await asyncio.open_connection(self.host, self.port)
                reader, writer = self.streams
                try:
                    writer.write(message)
                    await writer.drain()
                    status = await reader.readline()
                    if not status:
                        raise ConnectionResetError("closed by the server")
                    break
                except ConnectionError:
                    self.close()
                    if attempt:
                        raise
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                length = int(value) if name.strip().lower() == b"content-length" else length
            content = await reader.readexactly(length)
        if int(status.split()[1]) != 200:
            raise RuntimeError(f"{method} {path}: {status.decode().strip()} {content[:300]!r}")
        return orjson.loads(content)

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


def questions(seed: int) -> list[BfclQuestion]:
    """Every BFCL question with a text of its own, in a seeded order (routed only: nothing is tuned on them)."""
    first: dict[str, BfclQuestion] = {}
    for question in load_questions():
        first.setdefault(question.text.strip(), question)
    first.pop("", None)
    ordered = list(first.values())
    random.Random(seed).shuffle(ordered)
    return ordered


def sync_texts(functions: Sequence[FunctionDef]) -> tuple[list[str], int]:
    """What a full sync embeds, and how many of those texts are the functions' own.

    The functions' texts (``sync.diff.prepare``), then their parameter facets, each once in a
    sync (``sync.reconcile``).
    """
    builder = template(DEFAULT_TEMPLATE)
    texts = [builder(f) for f in functions]
    facets = list(dict.fromkeys(t for f in functions for t in parameter_facets(f)))
    return texts + facets, len(texts)


def spread(texts: Sequence[str], most: int) -> list[str]:
    """At most ``most`` of ``texts``, taken evenly over their lengths."""
    ordered = sorted(texts, key=len)
    step = max(1, -(-len(ordered) // most))
    return ordered[::step]


def body(functions: Sequence[FunctionDef]) -> bytes:
    """A catalog ``PUT`` body."""
    return json.dumps({"functions": [dict(f.definition) for f in functions]}).encode()


async def put(server: Server, catalog: bytes, label: str) -> float:
    """Seconds of a catalog ``PUT``, with the sync's progress (``GET /v1/status``) on a bar meanwhile."""
    connection, report = Connection(server.url, timeout=None), None

    async def timed() -> float:
        start = time.perf_counter()
        await connection.request("PUT", f"/v1/catalogs/{NAMESPACE}", catalog)
        return time.perf_counter() - start

    request = asyncio.create_task(timed())
    while not (await asyncio.wait({request}, timeout=1.0))[0]:
        status = await asyncio.to_thread(server.status)
        underway = [c["progress"] for c in status["catalogs"] if c["namespace"] == NAMESPACE and c["progress"]]
        if underway:
            total = underway[0]["total"]
            report = report or progress(label, total, unit="fn")
            report(underway[0]["done"], total)
    if report is not None:
        report(total, total)
    connection.close()
    return request.result()


async def clients(server: Server, texts: Sequence[str], count: int) -> float:
    """Requests per second of ``count`` clients routing ``texts`` (each once) as fast as answers come."""
    pending = iter(texts)
    connections = [Connection(server.url) for _ in range(count)]
    await asyncio.gather(*(c.request("GET", "/healthz") for c in connections))  # connected before the clock starts

    async def client(connection: Connection) -> None:
        for text in pending:
            await connection.request("POST", "/v1/route", route(text))

    start = time.perf_counter()
    await asyncio.gather(*(client(c) for c in connections))
    seconds = time.perf_counter() - start
    for connection in connections:
        connection.close()
    return len(texts) / seconds


def route(text: str) -> dict[str, Any]:
    """A route request for one new user turn, no session."""
    return {"namespace": NAMESPACE, "messages": [{"role": "user", "content": text}]}


async def sequential(server: Server, texts: Sequence[str], bare: Bare) -> tuple[list[float], list[float]]:
    """Milliseconds of each route of ``texts``, one at a time, and of the bare encode of each."""
    routes, encodes, http = [], [], Connection(server.url)
    for i, text in enumerate(tqdm(texts, desc="sequential routes", unit="q", leave=False)):
        if i % 2:  # which goes first alternates, so a drift of the machine weighs on both alike
            encodes.append(bare.one_ms(text))
        await asyncio.sleep(SETTLE)
        start = time.perf_counter()
        answer = await http.request("POST", "/v1/route", route(text))
        routes.append((time.perf_counter() - start) * 1000)
        if answer["context"] != text:
            raise RuntimeError(f"the route embedded {answer['context']!r}, not the turn's text")
        await asyncio.sleep(SETTLE)
        if not i % 2:
            encodes.append(bare.one_ms(text))
    http.close()
    return routes, encodes


async def store_runs(server: Server, runs: Sequence[BfclQuestion]) -> int:
    """Store each question as a finished run calling the functions it expects; the usage examples kept."""
    http = Connection(server.url)
    for question in tqdm(runs, desc="storing runs", unit="run", leave=False):
        body = {"namespace": NAMESPACE, "messages": run_of(question)}
        await http.request("POST", f"/v1/sessions/run-{question.id}/messages", body)
    count, cursor = 0, ""
    while cursor is not None:
        page = await http.request("GET", f"/v1/catalogs/{NAMESPACE}/examples?limit=1000{cursor}")
        count += len(page["examples"])
        cursor = page["next_cursor"] and f"&cursor={page['next_cursor']}"
    http.close()
    return count


async def measure(n: int, opts: argparse.Namespace, bare: Bare) -> Size:
    """Every figure of one catalog size, on a server of its own."""
    functions = build_catalog(n, seed=opts.seed)
    changed, edited = change_one(functions, seed=opts.seed)
    texts, own = sync_texts(functions)
    sample = spread(texts, opts.floor_texts)
    ordered = questions(opts.seed)
    asked = [q.text.strip() for q in ordered]
    need = 2 * opts.queries + len(CLIENTS) * opts.per_level
    if need > len(asked):
        raise SystemExit(f"{need} distinct questions needed, BFCL has {len(asked)}: lower --queries or --per-level")
    result = Size(n, sync_texts=(len(texts), own, len(sample)))
    say(f"{n:,} functions: starting router serve on an empty store")
    with Server() as server:
        result.rss_ready, result.embedding = server.rss(), server.status()["embedding"]
        result.sync_seconds = await put(server, body(functions), f"full sync of {n:,}")
        result.floor_rate = bare.rate(sample, label=f"bare encode of {len(sample):,} sync texts")
        result.routes, result.encodes = await sequential(server, asked[: opts.queries], bare)
        levels = asked[opts.queries : need - opts.queries]
        for i, count in enumerate(CLIENTS):
            say(f"{n:,} functions: {count} concurrent clients")
            texts_of_level = levels[i * opts.per_level : (i + 1) * opts.per_level]
            with server.sampling() as peak:
                result.throughput[count] = await clients(server, texts_of_level, count)
            result.rss_clients = peak[0] if count == max(CLIENTS) else result.rss_clients
        gain_texts = levels[CLIENTS.index(16) * opts.per_level :][: opts.per_level]
        result.gains = {batch: bare.batching_gain(gain_texts, batch) for batch in (4, 16)}
        bodies = [body(changed), body(functions)]
        for i in range(opts.repeats):
            result.changed.append(await put(server, bodies[i % 2], "1 changed"))
        result.changed_encode = bare.single_ms([template(DEFAULT_TEMPLATE)(edited)] * 5)
        held, after = {f.name for f in functions}, ordered[need - opts.queries : need]
        stored = [q for q in ordered[opts.queries : need - opts.queries] if set(q.expected) <= held]
        result.examples = (len(stored), await store_runs(server, stored))
        learned = {name for q in stored for name in q.expected}
        result.reached = sum(bool(set(q.expected) & learned) for q in after)
        texts_after = [q.text.strip() for q in after]
        result.learned_routes, result.learned_encodes = await sequential(server, texts_after, bare)
    return result


async def run(opts: argparse.Namespace) -> list[Size]:
    """Every size, the bare model loaded once."""
    bare = await asyncio.to_thread(Bare)
    results = []
    for n in opts.sizes:
        results.append(await measure(n, opts, bare))
        print(table(results), flush=True)
    return results


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments, measure, print the table and record it."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="catalog sizes, comma-separated (at most 10,000)")
    parser.add_argument("--queries", type=int, default=200, help="sequential routes per size")
    parser.add_argument("--per-level", type=int, default=256, help="distinct questions per client count")
    parser.add_argument("--floor-texts", type=int, default=8000, help="most texts the sync's floor encodes")
    parser.add_argument("--repeats", type=int, default=3, help="one-change PUTs, median kept")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-record", action="store_true", help="print only; leave RESULTS.md alone")
    opts = parser.parse_args(argv)
    opts.sizes = [int(s) for s in opts.sizes.split(",") if s.strip()]
    header = Header.begin("benchmarks.perf", argv)
    results = asyncio.run(run(opts))
    header.finish()
    body_ = report(results, opts)
    print(f"\n{header.markdown()}\n\n{body_}")
    if not opts.no_record:
        record(HEADING, body_, header)


if __name__ == "__main__":
    main()
