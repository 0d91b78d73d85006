"""A bounded load run over loopback: concurrent agents against a real ``router serve`` for minutes.

``python -m benchmarks.load [--clients 32] [--seconds 120] [--size 1000]`` (``make bench-load``).
A ``router serve`` process (``benchmarks.harness.Server``: embedded storage, 127.0.0.1, the example
catalogs in its catalog directory) gets the BFCL-grown catalog of ``--size`` functions through ``PUT``, then
``--clients`` clients each play agent sessions of four turns for ``--seconds`` seconds:

- **route** the turn (distinct BFCL questions; session, user, history and memories included),
  one turn in ten in ``ops``, a namespace the writer keeps changing;
- **store** the turn: the user's text (every fifth one stating a preference, which becomes a
  memory), a call of the top function, its result and the answer (usage examples learn from it);
- one session in three **reads its history** back;
- meanwhile a writer **updates a catalog** every ``--update-every`` seconds: one changed function
  in the large catalog, or the 20-function ``ops`` catalog shifted by one (one added, one removed).

Every answer must be a 200: anything else (a status, a timeout, a refused connection) is an
error, counted by kind. The run prints one table (requests, errors, p50/p95/p99, requests/s,
the server's resident memory) and records it in ``benchmarks/RESULTS.md`` under "## Load
(make bench-load)", with the harness's header.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.catalogs import build_catalog, change_one
from benchmarks.harness import Header, Server, record, say
from benchmarks.perf import body, put, questions

HEADING = "## Load (make bench-load)"
NAMESPACE, OPS = "bench", "ops"
TURNS = 4
KINDS = ("route", "store messages", "read history", "catalog update")
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "catalog"


@dataclass
class Tally:
    """Latencies and errors by request kind."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)

    async def call(self, kind: str, request: Any) -> httpx.Response | None:
        """Await ``request``; keep its latency, or count it as an error (by status and error kind)."""
        start = time.perf_counter()
        try:
            response: httpx.Response = await request
        except httpx.HTTPError as exc:
            self.errors[f"{kind}: {type(exc).__name__}"] += 1
            return None
        self.seconds[kind].append(time.perf_counter() - start)
        if response.status_code != 200:
            error = response.json().get("error", "") if "json" in response.headers.get("content-type", "") else ""
            self.errors[f"{kind}: HTTP {response.status_code} {error}".rstrip()] += 1
            return None
        return response


def distinct(texts: Sequence[str]) -> Iterator[str]:
    """The texts, then again with a round number: every question the server sees is new to its cache."""
    for round_ in itertools.count():
        for text in texts:
            yield text if round_ == 0 else f"{text} (round {round_ + 1})"


def turn_messages(question: str, routed: dict[str, Any], turn: int) -> list[dict[str, Any]]:
    """What an agent's run stores: the user's text, a call of the top function, its result, the answer."""
    said = f"{question} I prefer aisle seats and vegetarian meals." if turn % 5 == 0 else question
    messages: list[dict[str, Any]] = [{"role": "user", "content": said}]
    if routed["functions"]:
        name = routed["functions"][0]["name"]
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": name, "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": "done"},
        ]
    return [*messages, {"role": "assistant", "content": "Here is what I found."}]


async def agent(http: httpx.AsyncClient, tally: Tally, number: int, texts: Iterator[str], deadline: float) -> None:
    """Sessions of ``TURNS`` turns, one after the other, until the deadline."""
    for session in itertools.count():
        session_id, user_id = f"load-{number}-{session}", f"user-{number % 8}"
        for turn in range(TURNS):
            if time.monotonic() > deadline:
                return
            step = session * TURNS + turn
            namespace = OPS if step % 10 == 9 else NAMESPACE
            question = next(texts)
            body = {
                "namespace": namespace,
                "session_id": session_id,
                "user_id": user_id,
                "messages": [{"role": "user", "content": question}],
            }
            routed = await tally.call("route", http.post("/v1/route", json=body))
            if routed is None:
                continue
            messages = turn_messages(question, routed.json(), step)
            stored = {"namespace": namespace, "user_id": user_id, "messages": messages}
            await tally.call("store messages", http.post(f"/v1/sessions/{session_id}/messages", json=stored))
        if (number + session) % 3 == 0:
            await tally.call("read history", http.get(f"/v1/sessions/{session_id}/messages"))


def ops_catalog(functions: Sequence[dict[str, Any]], shift: int) -> dict[str, Any]:
    """20 functions of the large catalog, shifted by ``shift``: each shift adds one and removes one."""
    return {"functions": list(functions[shift : shift + 20])}


async def writer(http: httpx.AsyncClient, tally: Tally, bodies: Sequence[bytes], ops: Sequence[Any], *, every: float,
                 deadline: float) -> None:  # fmt: skip
    """A catalog update every ``every`` seconds: the large catalog (one function changed) or ``ops`` shifted."""
    headers = {"content-type": "application/json"}
    for update in itertools.count(1):
        await asyncio.sleep(every)
        if time.monotonic() > deadline:
            return
        if update % 2:
            body = bodies[update // 2 % 2]
            await tally.call("catalog update", http.put(f"/v1/catalogs/{NAMESPACE}", content=body, headers=headers))
        else:
            await tally.call("catalog update", http.put(f"/v1/catalogs/{OPS}", json=ops_catalog(ops, update // 2)))


def server_counts(server: Server) -> Counter[str]:
    """What the server counted (its ``/metrics``): requests, error answers, and model calls, texts
    and seconds by kind (``calls:query``, ``texts:query``, ``seconds:query``...)."""
    counts: Counter[str] = Counter()
    names = {
        "router_http_request_duration_seconds_count": "requests",
        "router_errors_total": "errors",
        "router_encode_duration_seconds_count": "calls",
        "router_encode_duration_seconds_sum": "seconds",
        "router_encode_batch_size_sum": "texts",
    }
    for metric, labels, value in server.metrics():
        name = names.get(metric)
        if name is not None:
            kind = labels.get("kind")
            counts[f"{name}:{kind}" if kind else name] += value
    return counts


@dataclass
class Outcome:
    """What one run measured."""

    tally: Tally
    seconds: float
    rss_ready: int
    rss_max: int
    high_water: int
    server: Counter[str]


def client(server: Server, *, connections: int) -> httpx.AsyncClient:
    """An httpx client for ``server`` keeping ``connections`` keep-alive connections."""
    # Idle connections are dropped before uvicorn's 5 s keep-alive closes them under a request in flight.
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=2.0)
    return httpx.AsyncClient(base_url=server.url, timeout=120.0, limits=limits)


async def run(opts: argparse.Namespace) -> Outcome:
    """Start the server, load the catalog, run the clients and the writer, read the server's counts."""
    functions = build_catalog(opts.size, seed=opts.seed)
    bodies = [body(change_one(functions, seed=opts.seed)[0]), body(functions)]
    definitions = [dict(f.definition) for f in functions]
    say(f"starting router serve with the example catalogs, then PUT {opts.size:,} functions")
    tally = Tally()
    with Server(catalog=EXAMPLES) as server:
        await put(server, bodies[1], "catalog")
        async with client(server, connections=opts.clients + 2) as http:
            (await http.put(f"/v1/catalogs/{OPS}", json=ops_catalog(definitions, 0))).raise_for_status()
            rss_ready = server.rss()
            texts = distinct(questions(opts.seed))
            before = await asyncio.to_thread(server_counts, server)
            say(f"{opts.clients} clients for {opts.seconds:.0f} s")
            started = time.monotonic()
            deadline = started + opts.seconds
            with server.sampling() as peak:
                await asyncio.gather(
                    writer(http, tally, bodies, definitions, every=opts.update_every, deadline=deadline),
                    *(agent(http, tally, i, texts, deadline) for i in range(opts.clients)),
                )
            elapsed = time.monotonic() - started
            after = await asyncio.to_thread(server_counts, server)
        counted = after - before
        counted["requests"] -= 1  # the scrape that took ``before``
        return Outcome(tally, elapsed, rss_ready, peak[0], server.high_water(), counted)


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0


def table(outcome: Outcome) -> str:
    """One row per request kind and one for all, with errors and latency quantiles."""
    rows = [
        "| requests | count | errors | p50 | p95 | p99 | max | per second |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    everything: list[float] = []
    for kind in KINDS:
        seconds = outcome.tally.seconds.get(kind, [])
        everything += seconds
        errors = sum(n for k, n in outcome.tally.errors.items() if k.startswith(f"{kind}:"))
        rows.append(_row(kind, seconds, errors, outcome.seconds))
    rows.append(_row("**all**", everything, sum(outcome.tally.errors.values()), outcome.seconds))
    return "\n".join(rows)


def _row(label: str, seconds: Sequence[float], errors: int, elapsed: float) -> str:
    ms = [f"{_quantile(seconds, q) * 1000:.1f} ms" for q in (0.5, 0.95, 0.99, 1.0)]
    return f"| {label} | {len(seconds) + errors:,} | {errors} | {' | '.join(ms)} | {len(seconds) / elapsed:.1f} |"


def report(outcome: Outcome, opts: argparse.Namespace) -> str:
    """The recorded section's body: the table and what was run."""
    errors = ", ".join(f"{k} x{n}" for k, n in sorted(outcome.tally.errors.items())) or "none"
    mb = 1024 * 1024
    return "\n".join([
        table(outcome),
        "",
        f"{opts.clients} concurrent clients for {outcome.seconds:.0f} s over loopback (latencies as each client saw "
        f"them). Errors by kind: {errors}. During the run the server counted {outcome.server['requests']:,.0f} "
        f"requests and {outcome.server['errors']:.0f} error answers (its `/metrics`). Server resident memory: "
        f"{outcome.rss_ready / mb:,.0f} MB with the catalogs loaded, {outcome.rss_max / mb:,.0f} MB at most during the "
        f"run (sampled every 250 ms; VmHWM {outcome.high_water / mb:,.0f} MB, start-up included).",
        "",
        model_time(outcome),
        "",
        f"Catalogs: `{NAMESPACE}` ({opts.size:,} BFCL-grown functions), `{OPS}` (20 of them) and the example catalogs; "
        f"embedded storage (Qdrant Edge). Each client plays sessions of {TURNS} turns: route the turn (distinct BFCL "
        "questions, a session and a user, so history and memories are read; one turn in ten in `ops`), then store "
        "it (the user's text, a call of the top function, its result, the answer; every fifth turn states a "
        "preference); one session in three reads its history back. A writer updates a catalog every "
        f"{opts.update_every:.0f} s (one function changed in `{NAMESPACE}`, or `{OPS}` shifted by one).",
    ])  # fmt: skip


def model_time(outcome: Outcome) -> str:
    """Where the server's model lanes spent the run, by kind of text (from its ``/metrics``)."""
    rows = ["| model calls | calls | texts | mean texts per call | model seconds | share of the run |"]
    rows.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for kind in ("query", "memory", "catalog", "facet"):
        calls, texts, seconds = (outcome.server[f"{what}:{kind}"] for what in ("calls", "texts", "seconds"))
        mean, share = texts / calls if calls else 0.0, seconds / outcome.seconds
        rows.append(f"| {kind} | {calls:,.0f} | {texts:,.0f} | {mean:.1f} | {seconds:.1f} s | {share:.0%} |")
    busy = sum(v for k, v in outcome.server.items() if k.startswith("seconds:")) / outcome.seconds
    rows += ["", f"The model's lanes were busy {busy:.0%} of the run in all (a share above 100% is lanes at once)."]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse arguments, run, print the table and record it."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=120.0, help="how long the clients run")
    parser.add_argument("--size", type=int, default=1000, help="functions in the large catalog")
    parser.add_argument("--update-every", type=float, default=20.0, help="seconds between catalog updates")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-record", action="store_true", help="print only; leave the results file alone")
    opts = parser.parse_args(argv)
    header = Header.begin("benchmarks.load", argv)
    outcome = asyncio.run(run(opts))
    text = report(outcome, opts)
    print(f"{header.finish().markdown()}\n\n{text}")
    if not opts.no_record:
        record(HEADING, text, header)
    if outcome.tally.errors:
        sys.exit(1)


if __name__ == "__main__":
    main()
