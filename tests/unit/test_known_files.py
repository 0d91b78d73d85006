"""What the writer knows of a namespace survives a clean stop, and is used only while it is certainly true."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from router.catalog_body import CatalogBody, split
from router.limits import LimitSettings
from router.meta import CatalogRecord
from sync import known_files
from sync.delta import resolve
from sync.diff import Known
from sync.known import StoredHashes
from sync.known_files import KnownFiles

LIMITS = LimitSettings(text_chars=200, depth=8)
CATALOG = [{"name": f"f{i}", "description": f"function number {i}"} for i in range(20)]


def cut(definitions: list[dict[str, Any]]) -> CatalogBody:
    body = split(json.dumps({"functions": definitions}).encode(), "PUT /v1/catalogs/t")
    assert body is not None
    return body


def written(definitions: list[dict[str, Any]] = CATALOG) -> Known:
    body = cut(definitions)
    return Known(body.document(LIMITS).functions, body.digests)


def record(write: str = "w1") -> CatalogRecord:
    return CatalogRecord("tools", "api", len(CATALOG), 0.0, write=write)


def store(generation: str = "gen-a", held: dict[str, str] | None = None) -> Any:
    """A function store of ``generation`` holding ``held`` (name: content hash; by default ``CATALOG``)."""
    held = dict(written()) if held is None else held
    return SimpleNamespace(
        generation=SimpleNamespace(id=generation),
        count=lambda _namespace: len(held),
        existing=lambda _namespace, names: {n: held[n] for n in names if n in held},
    )


def saved(root: Path, known: Known | None = None, *, at: Any = None, limits: LimitSettings = LIMITS) -> Any:
    """A clean stop that knew ``known`` of ``tools`` in ``at``; returns the store it was written for."""
    at = at or store()
    hashes = StoredHashes(KnownFiles(root, limits))
    hashes.keep(at, "tools", record(), known or written())
    assert hashes.save(at) == 1
    return at


def started(root: Path, limits: LimitSettings = LIMITS) -> StoredHashes:
    files = KnownFiles(root, limits)
    files.open()
    return StoredHashes(files)


def test_a_record_saved_at_a_clean_stop_tells_the_next_body_apart(tmp_path: Path) -> None:
    at = saved(tmp_path)
    hashes = started(tmp_path)
    assert hashes.files is not None
    assert hashes.files.holds("tools")

    hashes.restore(at, "tools", record(), LIMITS)

    basis = hashes.parts("tools")
    assert basis is not None
    assert basis == written().parts
    changed = [*CATALOG[:7], {"name": "f7", "description": "a new description"}, *CATALOG[8:]]
    delta = resolve(cut(changed), basis, LIMITS)
    assert delta is not None
    assert list(delta.fresh) == [7]
    known = hashes.take(at, "tools", record())
    assert known is not None
    plan = known.plan_delta(delta)
    assert [f.name for f in plan.updated] == ["f7"]
    assert len(plan.unchanged) == 19
    assert known["f3"] == written()["f3"]
    assert known.fingerprint("f3") == written().fingerprint("f3")


@pytest.mark.parametrize(
    ("found", "generation", "limits"),
    [
        (record("w2"), "gen-a", LIMITS),  # another write since the stop
        (record(), "gen-b", LIMITS),  # another model or text template
        (record(), "gen-a", LimitSettings(text_chars=100, depth=8)),  # bytes accepted under other limits
        (None, "gen-a", LIMITS),  # the namespace is gone
    ],
)
def test_a_saved_record_that_no_longer_describes_the_store_is_not_used(
    tmp_path: Path, found: CatalogRecord | None, generation: str, limits: LimitSettings
) -> None:
    saved(tmp_path)
    hashes = started(tmp_path)

    hashes.restore(store(generation), "tools", found, limits)

    assert hashes.parts("tools") is None
    assert hashes.files is not None
    assert not hashes.files.holds("tools")
    assert list(tmp_path.iterdir()) == []


def test_a_saved_record_is_used_once(tmp_path: Path) -> None:
    at = saved(tmp_path)
    hashes = started(tmp_path)
    hashes.restore(at, "tools", record(), LIMITS)
    assert hashes.take(at, "tools", record()) is not None

    hashes.restore(at, "tools", record(), LIMITS)

    assert hashes.parts("tools") is None
    assert list(tmp_path.iterdir()) == []


def test_what_a_process_that_did_not_stop_cleanly_left_is_deleted_unread(tmp_path: Path) -> None:
    at = saved(tmp_path)
    started(tmp_path)  # this process takes the file in hand, then dies without a clean stop
    assert [p.suffix for p in tmp_path.iterdir()] == [".open"]
    (tmp_path / "0123.known.partial").write_bytes(b"{")  # and another died while writing one

    hashes = started(tmp_path)
    hashes.restore(at, "tools", record(), LIMITS)

    assert hashes.parts("tools") is None
    assert list(tmp_path.iterdir()) == []


def test_a_record_not_taken_is_kept_for_the_next_process_across_a_clean_stop(tmp_path: Path) -> None:
    at = saved(tmp_path)
    idle = started(tmp_path)
    assert idle.save(at) == 0  # a clean stop that wrote nothing of ``tools``
    assert [p.suffix for p in tmp_path.iterdir()] == [".known"]

    hashes = started(tmp_path)
    hashes.restore(at, "tools", record(), LIMITS)

    assert hashes.parts("tools") == written().parts


@pytest.mark.parametrize("how", ["take", "forget"])
def test_a_write_in_this_process_drops_the_saved_record_first(tmp_path: Path, how: str) -> None:
    at = saved(tmp_path)
    hashes = started(tmp_path)

    if how == "take":
        assert hashes.take(at, "tools", record()) is None  # a write begins: nothing known in memory yet
    else:
        hashes.forget("tools")
    hashes.restore(at, "tools", record(), LIMITS)

    assert hashes.parts("tools") is None
    assert list(tmp_path.iterdir()) == []


def test_only_records_with_digests_of_the_store_in_use_are_saved(tmp_path: Path) -> None:
    hashes = StoredHashes(KnownFiles(tmp_path, LIMITS))
    served, old = store("gen-a"), store("gen-old")
    body = cut(CATALOG)
    hashes.keep(served, "listed", record(), Known(body.document(LIMITS).functions))  # from a list: no digests
    hashes.keep(old, "tools", record(), written())

    assert hashes.save(served) == 0
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []
    assert StoredHashes().save(served) == 0  # no directory: nothing to save


@pytest.mark.parametrize(
    "held",
    [
        {},  # the collection was emptied or created anew behind the catalog record's back
        {**dict(written()), "f0": "0" * 64},  # or brought back from an older copy
        dict(list(dict(written()).items())[1:]),  # or lost a function
        {**dict(written()), "zz": "0" * 64},  # or holds one more
    ],
)
def test_a_saved_record_the_store_does_not_bear_out_is_not_used(tmp_path: Path, held: dict[str, str]) -> None:
    saved(tmp_path)
    hashes = started(tmp_path)

    hashes.restore(store(held=held), "tools", record(), LIMITS)

    assert hashes.parts("tools") is None
    assert list(tmp_path.iterdir()) == []


def test_a_write_after_the_stop_saved_drops_the_saved_record(tmp_path: Path) -> None:
    at = store()
    hashes = StoredHashes(KnownFiles(tmp_path, LIMITS))
    hashes.keep(at, "tools", record(), written())
    assert hashes.save(at) == 1
    assert [p.suffix for p in tmp_path.iterdir()] == [".known"]

    assert hashes.take(at, "tools", record()) is not None  # a write begins after the save

    assert list(tmp_path.iterdir()) == []


def test_a_record_put_back_at_a_stop_is_dropped_by_a_later_write(tmp_path: Path) -> None:
    at = saved(tmp_path)
    idle = started(tmp_path)
    assert idle.save(at) == 0  # put back untaken
    idle.forget("tools")

    assert list(tmp_path.iterdir()) == []


def _rewritten(path: Path, change: Any) -> None:
    header, names, rest = path.read_bytes().split(b"\n", 2)
    path.write_bytes(b"\n".join(change(header, names, rest)))


@pytest.mark.parametrize(
    "damage",
    [
        lambda _header, names, rest: (b"[]", names, rest),  # a header of another JSON type
        lambda header, names, rest: (header, names.replace(b'"f3"', b'"g3"'), rest),  # a name changed
        lambda header, names, rest: (header, names, rest[:5] + bytes([rest[5] ^ 1]) + rest[6:]),  # a hash bit
        lambda header, names, rest: (header, names, rest[:-1] + bytes([rest[-1] ^ 1])),  # a digest bit
        lambda header, _names, rest: (header, b"{}", rest),  # names of another JSON type
        lambda header, names, rest: (header, names, rest[:-5]),  # cut short
    ],
)
def test_a_damaged_file_is_passed_over_and_dropped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Any
) -> None:
    at = saved(tmp_path)
    (path,) = tmp_path.iterdir()
    _rewritten(path, damage)
    hashes = started(tmp_path)

    hashes.restore(at, "tools", record(), LIMITS)

    assert hashes.parts("tools") is None
    assert "saved catalog record unreadable" in caplog.text
    assert list(tmp_path.iterdir()) == []
    assert hashes.files is not None
    assert hashes.files.save(()) == 0
    assert list(tmp_path.iterdir()) == []  # not put back at the next stop either


def test_a_record_without_a_write_id_is_not_saved(tmp_path: Path) -> None:
    hashes = StoredHashes(KnownFiles(tmp_path, LIMITS))
    at = store()
    hashes.keep(at, "tools", record(write=""), written())

    assert hashes.save(at) == 0
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []


def test_without_the_validation_code_nothing_is_saved_and_old_records_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = saved(tmp_path)
    monkeypatch.setattr("sync.known_files.validation_key", lambda: None)
    hashes = started(tmp_path)

    hashes.restore(at, "tools", record(), LIMITS)

    assert hashes.parts("tools") is None
    assert list(tmp_path.iterdir()) == []
    hashes.keep(at, "tools", record(), written())
    assert hashes.save(at) == 0


def test_the_validation_key_follows_the_parsing_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    before = known_files.validation_key()
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "0.0" if name == "orjson" else real(name))
    assert known_files.validation_key() not in (None, before)

    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert known_files.validation_key() is None


def test_a_store_that_cannot_say_leaves_the_saved_record_unused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    saved(tmp_path)
    hashes = started(tmp_path)
    failing = store()

    def broken(_namespace: str) -> int:
        raise OSError("shard unreadable")

    failing.count = broken

    hashes.restore(failing, "tools", record(), LIMITS)

    assert hashes.parts("tools") is None
    assert "saved catalog record unchecked" in caplog.text
    assert list(tmp_path.iterdir()) == []


def test_an_empty_catalog_is_not_saved(tmp_path: Path) -> None:
    hashes = StoredHashes(KnownFiles(tmp_path, LIMITS))
    at = store(held={})
    hashes.keep(at, "tools", record(), written([]))

    assert hashes.save(at) == 0
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []
