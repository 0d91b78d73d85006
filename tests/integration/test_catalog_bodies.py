"""Catalog PUTs told apart by their definitions' bytes: one change decodes one definition, errors stay the same."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from collections.abc import Callable
from typing import Any

import pytest

from router.catalog import parse_document
from router.catalog_body import CatalogBody
from router.limits import LimitSettings
from sync import service as service_module
from sync.delta import resolve
from sync.known_files import KnownFiles
from tests.conftest import bare, writes_cut_short

pytestmark = pytest.mark.integration

JSON = {"content-type": "application/json"}
LIMITS = LimitSettings(functions=50, text_chars=500, depth=12)
CATALOG = [bare(f"tool_{i}", f"Tool number {i} looks up record kind {i}.", key="Record key") for i in range(30)]


def body(functions: list[Any], **extra: Any) -> bytes:
    return json.dumps({"functions": functions, **extra}).encode()


def edited(index: int, description: str, functions: list[Any] = CATALOG) -> list[Any]:
    return [*functions[:index], {**functions[index], "description": description}, *functions[index + 1 :]]


def in_order(functions: list[Any]) -> list[Any]:
    return sorted(functions, key=lambda f: f["name"])


def spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of definitions decoded one by one and of bodies decoded whole."""
    counts = {"function": 0, "document": 0}
    for name in counts:
        original = getattr(CatalogBody, name)

        def counted(self: CatalogBody, *args: Any, _original: Any = original, _name: str = name) -> Any:
            counts[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(CatalogBody, name, counted)
    return counts


async def put(served: Any, namespace: str, data: bytes) -> Any:
    return await served.client.put(
        f"/v1/catalogs/{namespace}", content=data, headers={"content-type": "application/json"}
    )


async def test_one_changed_definition_is_the_only_one_decoded(
    serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(limits=LIMITS) as served:
        assert (await put(served, "tools", body(CATALOG))).json()["added"] == 30
        counts = spy(monkeypatch)

        changed = await put(served, "tools", body(edited(12, "Tool twelve now books rooms."), pinned=["tool_3"]))
        same = await put(served, "tools", body(edited(12, "Tool twelve now books rooms."), pinned=["tool_3"]))

        assert changed.json() == {"namespace": "tools", "added": 0, "updated": 1, "removed": 0, "unchanged": 29}
        assert same.json()["unchanged"] == 30
        assert counts == {"function": 1, "document": 0}
        stored = (await served.client.get("/v1/catalogs/tools")).json()
        assert in_order(stored["functions"]) == in_order(edited(12, "Tool twelve now books rooms."))
        assert stored["pinned"] == ["tool_3"]
        route = await served.client.post(
            "/v1/route", json={"namespace": "tools", "messages": [{"role": "user", "content": "book me a room"}]}
        )
        assert [f["name"] for f in route.json()["functions"]][:2] == ["tool_3", "tool_12"]  # the pin, then the best


async def test_the_first_body_after_a_clean_restart_decodes_only_what_changed(
    serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(limits=LIMITS) as served:
        assert (await put(served, "tools", body(CATALOG))).json()["added"] == 30
    assert [p.suffix for p in (served.data / "known").iterdir()] == [".known"]

    async with serve(limits=LIMITS) as served:
        counts = spy(monkeypatch)
        changed = await put(served, "tools", body(edited(5, "Tool five now books flights.")))

        assert changed.json() == {"namespace": "tools", "added": 0, "updated": 1, "removed": 0, "unchanged": 29}
        assert counts == {"function": 1, "document": 0}
        stored = (await served.client.get("/v1/catalogs/tools")).json()
        assert in_order(stored["functions"]) == in_order(edited(5, "Tool five now books flights."))


@pytest.mark.parametrize("first", ["split body", "another source"])
async def test_a_write_cut_short_after_a_restart_leaves_the_saved_record_unused(
    serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, first: str
) -> None:
    async with serve(limits=LIMITS) as served:
        await put(served, "tools", body(CATALOG))

    async with serve(limits=LIMITS) as served:
        service = served.runtime.service
        with writes_cut_short(service.index.store):
            if first == "split body":
                failed = await put(served, "tools", body(edited(5, "Tool five now books flights.")))
                assert failed.status_code == 500
            else:  # a write that never reads the saved record: it must drop it all the same
                document = parse_document({"functions": edited(5, "Tool five now books flights.")}, source="test")
                functions = document.functions
                with pytest.raises(OSError, match="disk full"):
                    await service.apply("tools", functions, source="api")
        counts = spy(monkeypatch)
        # The store holds the new tool_5, the catalog record the old write: the old bytes are not "unchanged".
        back = await put(served, "tools", body(CATALOG))

        assert back.json()["updated"] == 1
        assert counts["document"] == 1
        stored = (await served.client.get("/v1/catalogs/tools")).json()
        assert in_order(stored["functions"]) == in_order(CATALOG)


async def test_a_collection_emptied_between_two_processes_is_written_again(serve: Callable[..., Any]) -> None:
    async with serve(limits=LIMITS) as served:
        await put(served, "tools", body(CATALOG))
        generation = served.runtime.service.index.generation.id
    # Deleted behind the catalog record's back (to force a re-embed, say): the record and known/ stay.
    shutil.rmtree(served.data / f"functions-{generation}")

    async with serve(limits=LIMITS) as served:
        again = await put(served, "tools", body(CATALOG))

        assert again.json()["added"] == 30
        stored = (await served.client.get("/v1/catalogs/tools")).json()
        assert in_order(stored["functions"]) == in_order(CATALOG)


async def test_a_write_cut_short_after_the_stop_saved_leaves_the_saved_record_unused(
    serve: Callable[..., Any],
) -> None:
    async with serve(limits=LIMITS) as served:
        await put(served, "tools", body(CATALOG))
        service = served.runtime.service
        await service.save_known()  # what a stop does first; a write that starts after it is cut short
        with writes_cut_short(service.index.store):
            failed = await put(served, "tools", body(edited(5, "Tool five now books flights.")))
            assert failed.status_code == 500

    async with serve(limits=LIMITS) as served:
        back = await put(served, "tools", body(CATALOG))

        assert back.json()["updated"] == 1
        stored = (await served.client.get("/v1/catalogs/tools")).json()
        assert in_order(stored["functions"]) == in_order(CATALOG)


async def test_a_stop_flushes_the_shards_before_it_saves_their_records(
    serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    async with serve(limits=LIMITS) as served:
        await put(served, "tools", body(CATALOG))
        storage = served.runtime.storage
        flush, save = type(storage).flush, KnownFiles.save

        def flushed(self: Any) -> None:
            events.append("flush")
            flush(self)

        def saved(self: KnownFiles, records: Any) -> int:
            events.append("save")
            return save(self, records)

        monkeypatch.setattr(type(storage), "flush", flushed)
        monkeypatch.setattr(KnownFiles, "save", saved)
        assert await served.runtime.service.save_known() == 1

    assert events[:2] == ["flush", "save"]


DEEP: list[Any] = [[[[[[[[[[[]]]]]]]]]]]


def bad_bodies() -> list[bytes]:
    """Bodies refused for a limit, a definition, a name or a pin, each differing from ``CATALOG`` in one place."""
    return [
        body(edited(4, "has a NUL \x00")),
        body(edited(4, "x" * 600)),
        body([*CATALOG[:4], {"name": "bad name"}, *CATALOG[5:]]),
        body([*CATALOG, CATALOG[2]]),
        body(edited(4, "deep", [*CATALOG[:4], {**CATALOG[4], "parameters": {"a": DEEP}}, *CATALOG[5:]])),
        body(CATALOG * 2),
        body(edited(4, "fine"), pinned=["nobody"]),
        body(edited(4, "fine"), pinned=["tool_1", "NUL \x00"]),
        body([*edited(4, "x" * 600)[:10], {"name": "bad name"}]),  # a limit first, a bad definition later
    ]


async def test_a_known_body_is_refused_as_a_first_body_is(serve: Callable[..., Any]) -> None:
    async with serve(limits=LIMITS) as served:
        assert (await put(served, "known", body(CATALOG))).status_code == 200
        before = (await served.client.get("/v1/catalogs/known")).json()
        for data in bad_bodies():
            first = await put(served, "first", data)
            known = await put(served, "known", data)

            assert first.status_code in (400, 422), first.text
            assert known.status_code == first.status_code
            assert known.json()["error"] == first.json()["error"]
            assert known.json()["detail"] == first.json()["detail"].replace("/first", "/known")
        assert (await served.client.get("/v1/catalogs/known")).json() == before
        assert (await served.client.get("/v1/catalogs/first")).status_code == 404
        again = await put(served, "known", body(edited(4, "Tool four, edited.")))
        assert again.json()["updated"] == 1
        assert again.json()["unchanged"] == 29


async def test_a_write_from_elsewhere_between_two_bodies_is_planned_against(serve: Callable[..., Any]) -> None:
    async with serve(limits=LIMITS) as served:
        await put(served, "tools", body(CATALOG))
        service = served.runtime.service
        listed = [f for f in await service.functions("tools") if f.name != "tool_0"]
        await service.apply("tools", listed, source="dir:elsewhere")  # a list: no digests of bytes

        response = await put(served, "tools", body(edited(5, "Tool five, edited.")))

        assert response.json() == {"namespace": "tools", "added": 1, "updated": 1, "removed": 0, "unchanged": 28}
        stored = (await served.client.get("/v1/catalogs/tools")).json()["functions"]
        assert in_order(stored) == in_order(edited(5, "Tool five, edited."))


async def test_bodies_resolved_together_are_each_planned_against_what_is_stored(
    serve: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with serve(limits=LIMITS) as served:
        await put(served, "tools", body(CATALOG))
        both = threading.Barrier(2, timeout=30)

        def resolved_together(*args: Any) -> Any:
            result = resolve(*args)
            both.wait()  # neither takes the writer's lock before both resolved against the same record
            return result

        monkeypatch.setattr(service_module, "resolve", resolved_together)
        counts = spy(monkeypatch)
        first, second = await asyncio.gather(
            put(served, "tools", body(edited(1, "Tool one, edited."))),
            put(served, "tools", body(edited(2, "Tool two, edited."))),
        )

        answers = sorted([first.json()["updated"], second.json()["updated"]])
        assert answers == [1, 2]  # the later body also puts tool_1 (or tool_2) back
        assert counts["document"] == 1  # the later one, decoded whole against the record the first left
        stored = (await served.client.get("/v1/catalogs/tools")).json()["functions"]
        assert in_order(stored) in (in_order(edited(1, "Tool one, edited.")), in_order(edited(2, "Tool two, edited.")))
