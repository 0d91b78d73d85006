"""Cluster settings: what reaches qdrant-client on creation, writes and reads, and what is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from qdrant_client import models

from router import cli
from router.server.backends import open_server
from router.server.settings import StorageSettings
from router.storage.cluster import ClusterOptions

URL = "http://qdrant:6333"


def test_defaults_leave_the_server_to_decide_and_still_wait_for_writes() -> None:
    options = ClusterOptions()

    assert options.creation() == {}
    assert options.writes() == {"wait": True, "ordering": None}
    assert options.reads() == {}


def test_every_option_reaches_its_call() -> None:
    options = ClusterOptions(
        shard_number=6, replication_factor=2, write_consistency_factor=2, write_ordering="medium", read_consistency=2
    )

    assert options.creation() == {"shard_number": 6, "replication_factor": 2, "write_consistency_factor": 2}
    assert options.writes() == {"wait": True, "ordering": models.WriteOrdering.MEDIUM}
    assert options.reads() == {"consistency": 2}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("majority", models.ReadConsistencyType.MAJORITY),
        ("quorum", models.ReadConsistencyType.QUORUM),
        ("all", models.ReadConsistencyType.ALL),
    ],
)
def test_named_read_consistency(kind: str, expected: models.ReadConsistencyType) -> None:
    assert ClusterOptions(read_consistency=kind).reads() == {"consistency": expected}  # type: ignore[arg-type]


def test_a_small_collection_keeps_one_shard_with_its_replicas() -> None:
    options = ClusterOptions(shard_number=6, replication_factor=2)

    assert options.creation(sharded=False) == {"shard_number": 1, "replication_factor": 2}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shard_number": 0}, "shard_number must be at least 1"),
        ({"read_consistency": 0}, "read_consistency must be at least 1"),
        ({"write_consistency_factor": 2}, "exceeds the replication factor 1"),
        ({"replication_factor": 2, "write_consistency_factor": 3}, "exceeds the replication factor 2"),
    ],
)
def test_impossible_options_are_refused(options: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClusterOptions(**options)  # type: ignore[arg-type]


def test_environment_sets_the_cluster_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "QDRANT_URL": URL,
        "SHARD_NUMBER": "6",
        "REPLICATION_FACTOR": "2",
        "WRITE_CONSISTENCY_FACTOR": "2",
        "WRITE_ORDERING": "strong",
        "READ_CONSISTENCY": "majority",
        "TIMEOUT": "30",
    }.items():
        monkeypatch.setenv(f"ROUTER_STORAGE_{name}", value)

    storage = open_server(StorageSettings())
    try:
        options = storage.cluster
        assert (options.shard_number, options.replication_factor, options.write_consistency_factor) == (6, 2, 2)
        assert (options.write_ordering, options.read_consistency) == ("strong", "majority")
        assert storage.location == URL
        assert storage.client.init_options["timeout"] == 30
    finally:
        storage.close()


def test_a_number_of_replicas_to_read_comes_as_an_int(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_STORAGE_READ_CONSISTENCY", "2")

    assert StorageSettings(qdrant_url=URL).read_consistency == 2


def test_empty_variables_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    # docker-compose.yml passes ${ROUTER_STORAGE_SHARD_NUMBER:-} and the like through.
    monkeypatch.setenv("ROUTER_STORAGE_SHARD_NUMBER", "")
    monkeypatch.setenv("ROUTER_STORAGE_WRITE_ORDERING", "")

    settings = StorageSettings(qdrant_url=URL)

    assert settings.shard_number is None
    assert settings.write_ordering == "weak"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"write_consistency_factor": 2}, r"WRITE_CONSISTENCY_FACTOR=2 exceeds the replication factor 1"),
        ({"replication_factor": 2, "write_consistency_factor": 3}, "exceeds the replication factor 2"),
        ({"read_consistency": 0}, "READ_CONSISTENCY=0 must be at least 1"),
        ({"read_consistency": "most"}, "read_consistency"),
        ({"write_ordering": "eventual"}, "write_ordering"),
        ({"shard_number": 0}, "shard_number"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_impossible_settings_are_refused_at_start_up(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        StorageSettings(qdrant_url=URL, **values)  # type: ignore[arg-type]


def test_cluster_settings_without_a_server_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"ROUTER_STORAGE_REPLICATION_FACTOR, .*_WRITE_ORDERING only apply"):
        StorageSettings(data=tmp_path, replication_factor=2, write_ordering="medium")
    # Not "set the replication factor", which would be refused in turn.
    with pytest.raises(ValidationError, match=r"WRITE_CONSISTENCY_FACTOR only applies to a Qdrant server"):
        StorageSettings(data=tmp_path, write_consistency_factor=2)


def test_the_command_line_says_what_to_change(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUTER_STORAGE_SHARD_NUMBER", "3")

    code = cli.main(["sync", "--catalog", str(tmp_path), "--data", str(tmp_path / "d")])

    assert code == 2
    assert "ROUTER_STORAGE_SHARD_NUMBER only applies to a Qdrant server" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()
