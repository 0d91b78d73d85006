"""Routes while a sync replaces much of a catalog: none fails, and none started after the sync
returned names a function it removed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from conftest import large_catalog

pytestmark = pytest.mark.integration

CLIENTS = 4
AFTER = 40  # routes each client makes once the sync has returned


@dataclass(frozen=True)
class Routed:
    started: float
    status: int
    names: frozenset[str]


async def test_routes_during_a_sync_never_fail_nor_return_what_it_removed(serve: Callable[..., Any]) -> None:
    every = large_catalog(650)
    before, after = every[:400], every[200:650]  # 200 removed, 200 kept, 250 added
    removed = {f["name"] for f in every[:200]}
    # Each query is a removed or an added function's own description: its best match while it exists.
    queries = [f["description"] for f in every[:200:7] + every[400::9]]
    routed: list[Routed] = []
    applied_at: list[float] = []

    async def client_loop(client: httpx.AsyncClient, offset: int) -> None:
        count = 0
        while not applied_at or count < AFTER:
            if applied_at:
                count += 1
            text = queries[(offset + len(routed)) % len(queries)]
            body = {"namespace": "ops", "messages": [{"role": "user", "content": text}], "max_functions": 10}
            started = time.monotonic()
            response = await client.post("/v1/route", json=body)
            functions = response.json()["functions"] if response.status_code == 200 else []
            routed.append(Routed(started, response.status_code, frozenset(f["name"] for f in functions)))

    async with serve() as served:
        assert (await served.client.put("/v1/catalogs/ops", json={"functions": before})).status_code == 200
        loops = [asyncio.create_task(client_loop(served.client, i * 11)) for i in range(CLIENTS)]
        synced_from = time.monotonic()
        put = await served.client.put("/v1/catalogs/ops", json={"functions": after})
        applied_at.append(time.monotonic())
        async with asyncio.timeout(300):
            await asyncio.gather(*loops)

    assert put.status_code == 200
    assert put.json() == {
        "namespace": "ops",
        "added": 250,
        "updated": 0,
        "removed": 200,
        "unchanged": 200,
    }
    assert [r.status for r in routed if r.status != 200] == []
    during = [r for r in routed if synced_from <= r.started < applied_at[0]]
    later = [r for r in routed if r.started >= applied_at[0]]
    assert len(during) >= CLIENTS  # the routes did overlap the sync
    assert len(later) >= CLIENTS * AFTER
    known = {f["name"] for f in every}
    assert all(r.names <= known for r in routed)
    assert [sorted(r.names & removed) for r in later if r.names & removed] == []
    # Before the sync those queries found the functions it then removed: the check above could fail.
    assert any(r.names & removed for r in routed if r.started < applied_at[0])
