"""The background worker of ``router serve --catalog DIR``: edits show through HTTP within seconds."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import STOCKS, TIMEZONE, WEATHER, bare, eventually, write_catalog

from router.catalog.limits import LimitSettings
from router.server.runtime import Runtime
from router.server.settings import Settings, StorageSettings, SyncSettings

pytestmark = pytest.mark.integration


async def names(client: httpx.AsyncClient, namespace: str) -> set[str] | None:
    """The function names of a namespace, or None when it is unknown."""
    response = await client.get(f"/v1/catalogs/{namespace}")
    if response.status_code == 404:
        return None
    return {(f.get("function") or f)["name"] for f in response.json()["functions"]}


async def logged(caplog: pytest.LogCaptureFixture, message: str) -> None:
    async def seen() -> bool:
        return any(r.getMessage() == message for r in caplog.records)

    await eventually(seen)


async def test_an_edit_is_reflected_within_two_seconds(serve: Callable[..., Any], catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    async with serve(catalog=catalog_dir) as served:
        assert await names(served.client, "tools") == {"get_weather", "get_stock_price"}

        write_catalog(catalog_dir, "tools", [WEATHER, TIMEZONE])

        async def edited() -> bool:
            return await names(served.client, "tools") == {"get_weather", "get_local_time"}

        await eventually(edited)
        routed = await served.client.post(
            "/v1/route",
            json={"namespace": "tools", "messages": [{"role": "user", "content": "what time is it in Tokyo?"}]},
        )
        assert routed.json()["functions"][0]["name"] == "get_local_time"


async def test_a_changed_description_is_re_embedded(serve: Callable[..., Any], catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    async with serve(catalog=catalog_dir) as served:
        query = {"namespace": "tools", "messages": [{"role": "user", "content": "translate this text into French"}]}
        translate = bare("get_weather", "Translate a text into another language.", text="Text to translate")

        write_catalog(catalog_dir, "tools", [translate, STOCKS])

        async def re_embedded() -> bool:
            functions = (await served.client.post("/v1/route", json=query)).json()["functions"]
            return functions[0]["description"] == translate["description"]

        await eventually(re_embedded)


async def test_a_new_file_adds_a_namespace(serve: Callable[..., Any], catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER])
    async with serve(catalog=catalog_dir) as served:
        write_catalog(catalog_dir, "markets", [STOCKS], suffix=".yaml")

        async def added() -> bool:
            return await names(served.client, "markets") == {"get_stock_price"}

        await eventually(added)
        listed = (await served.client.get("/v1/catalogs")).json()["catalogs"]
        assert [c["namespace"] for c in listed] == ["markets", "tools"]


async def test_an_invalid_edit_keeps_the_catalog_until_fixed(
    serve: Callable[..., Any], catalog_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    async with serve(catalog=catalog_dir) as served:
        before = (await served.client.get("/v1/catalogs/tools")).json()

        write_catalog(catalog_dir, "tools", [WEATHER, {"name": "get stock price"}])
        await logged(caplog, "catalog file rejected")

        assert (await served.client.get("/v1/catalogs/tools")).json() == before
        [record] = [r for r in caplog.records if r.getMessage() == "catalog file rejected"]
        assert record.levelno == logging.ERROR
        assert record.detail.startswith(f"{catalog_dir / 'tools.json'}: [1].name:")  # type: ignore[attr-defined]

        write_catalog(catalog_dir, "tools", [WEATHER])

        async def fixed() -> bool:
            return await names(served.client, "tools") == {"get_weather"}

        await eventually(fixed)


@pytest.mark.parametrize(
    ("functions", "limit"),
    [
        ([{"name": "get stock price"}], None),  # fails to validate
        ([WEATHER, STOCKS, TIMEZONE], 2),  # parses, and the store refuses it: over the function limit
    ],
)
async def test_a_rejected_file_is_said_once_while_other_files_change(
    serve: Callable[..., Any],
    catalog_dir: Path,
    caplog: pytest.LogCaptureFixture,
    functions: list[dict[str, Any]],
    limit: int | None,
) -> None:
    write_catalog(catalog_dir, "rejected", functions)
    limits = LimitSettings(functions=limit) if limit else None
    async with serve(catalog=catalog_dir, limits=limits) as served:
        for edit in ([WEATHER], [STOCKS]):
            write_catalog(catalog_dir, "tools", edit)
            expected = {(f.get("function") or f)["name"] for f in edit}
            await eventually(lambda expected=expected: _holds(served, expected))

        rejected = [r for r in caplog.records if r.getMessage() == "catalog file rejected"]
        assert len(rejected) == 1, [r.detail for r in rejected]  # type: ignore[attr-defined]


async def test_an_emptied_file_keeps_its_namespace(
    serve: Callable[..., Any], catalog_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    async with serve(catalog=catalog_dir) as served:
        (catalog_dir / "tools.json").write_text("")
        await logged(caplog, "catalog file empty")

        assert await names(served.client, "tools") == {"get_weather", "get_stock_price"}


async def test_a_deleted_file_keeps_its_namespace(
    serve: Callable[..., Any], catalog_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
    async with serve(catalog=catalog_dir) as served:
        (catalog_dir / "tools.json").unlink()
        await logged(caplog, "catalog file missing")

        assert await names(served.client, "tools") == {"get_weather", "get_stock_price"}


async def test_with_allow_delete_a_deleted_file_removes_its_namespace(
    serve: Callable[..., Any], catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER])
    write_catalog(catalog_dir, "kept", [STOCKS])
    async with serve(catalog=catalog_dir, allow_delete=True) as served:
        (catalog_dir / "tools.json").unlink()

        async def removed() -> bool:
            return await names(served.client, "tools") is None

        await eventually(removed)
        assert await names(served.client, "kept") == {"get_stock_price"}


async def test_api_writes_and_the_directory_coexist(serve: Callable[..., Any], catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER])
    async with serve(catalog=catalog_dir, allow_delete=True) as served:
        put = await served.client.put("/v1/catalogs/from_api", json={"functions": [STOCKS]})
        write_catalog(catalog_dir, "tools", [WEATHER, TIMEZONE])

        async def edited() -> bool:
            return await names(served.client, "tools") == {"get_weather", "get_local_time"}

        await eventually(edited)
        assert put.status_code == 200
        assert await names(served.client, "from_api") == {"get_stock_price"}


async def test_readiness_waits_for_the_first_pass(serve: Callable[..., Any], catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER])
    async with serve(catalog=catalog_dir) as served:
        worker = served.runtime.worker
        assert worker is not None
        assert worker.first_pass_done.is_set()
        assert (await served.client.get("/readyz")).status_code == 200


async def test_a_missing_catalog_directory_stops_start_up(tmp_path: Path, embedders: Any) -> None:
    settings = Settings(storage=StorageSettings(data=tmp_path / "data"), sync=SyncSettings(catalog=tmp_path / "nope"))
    runtime = Runtime(settings, embedders=embedders)
    try:
        with pytest.raises(Exception, match="does not exist"):
            await runtime.start()
    finally:
        await asyncio.sleep(0.1)  # let spawned tasks start, see test_restart's never-awaited case
        await runtime.stop()


async def test_a_directory_made_again_or_swapped_is_watched_anew(serve: Callable[..., Any], catalog_dir: Path) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER])
    async with serve(catalog=catalog_dir) as served:
        shutil.rmtree(catalog_dir)
        await asyncio.sleep(1.5)  # the watcher sees its directory gone
        os.mkdir(catalog_dir)
        write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])

        async def made_again() -> bool:
            return await names(served.client, "tools") == {"get_weather", "get_stock_price"}

        await eventually(made_again, within=10)
        # Edits after it count too: the new directory is the one watched.
        write_catalog(catalog_dir, "tools", [TIMEZONE])

        async def edited() -> bool:
            return await names(served.client, "tools") == {"get_local_time"}

        await eventually(edited, within=10)

        swapped = catalog_dir.with_name("swapped")
        os.mkdir(swapped)
        write_catalog(swapped, "tools", [STOCKS])
        os.rename(catalog_dir, catalog_dir.with_name("old"))
        os.rename(swapped, catalog_dir)
        await eventually(lambda: _holds(served, {"get_stock_price"}), within=10)
        write_catalog(catalog_dir, "tools", [WEATHER])
        await eventually(lambda: _holds(served, {"get_weather"}), within=10)


async def test_a_file_name_that_is_not_utf8_does_not_stop_the_watch(
    serve: Callable[..., Any], catalog_dir: Path
) -> None:
    write_catalog(catalog_dir, "tools", [WEATHER])
    async with serve(catalog=catalog_dir) as served:
        _write_bytes(os.path.join(os.fsencode(catalog_dir), b"bad\xff.json"), b"[]")
        await asyncio.sleep(1.0)
        write_catalog(catalog_dir, "tools", [WEATHER, STOCKS])
        await eventually(lambda: _holds(served, {"get_weather", "get_stock_price"}), within=10)


async def _holds(served: Any, expected: set[str]) -> bool:
    return await names(served.client, "tools") == expected


def _write_bytes(path: bytes, data: bytes) -> None:
    with open(path, "wb") as file:
        file.write(data)


async def test_a_configmap_style_update_is_applied(serve: Callable[..., Any], catalog_dir: Path) -> None:
    # Kubernetes mounts a ConfigMap as links through "..data" and updates it by swapping that link alone.
    _configmap_version(catalog_dir, "..v1", [WEATHER])
    os.symlink("..v1", catalog_dir / "..data")
    os.symlink("..data/tools.json", catalog_dir / "tools.json")
    async with serve(catalog=catalog_dir) as served:
        assert await _holds(served, {"get_weather"})
        await asyncio.sleep(1.5)  # past the watcher's first tick, which passes whatever it saw
        _configmap_version(catalog_dir, "..v2", [WEATHER, STOCKS])
        os.symlink("..v2", catalog_dir / "..data_tmp")
        os.rename(catalog_dir / "..data_tmp", catalog_dir / "..data")
        await eventually(lambda: _holds(served, {"get_weather", "get_stock_price"}), within=10)


def _configmap_version(directory: Path, name: str, functions: Any) -> None:
    os.mkdir(directory / name)
    write_catalog(directory / name, "tools", functions)
