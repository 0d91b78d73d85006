"""Settings: one class per concern, ``ROUTER_*`` variables, flags over variables, conflicts rejected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from router import cli
from router.embedding import DEFAULT_MODEL
from router.retrieval.texts import DEFAULT_TEMPLATE
from router.server.embedding_settings import EmbeddingSettings
from router.server.settings import RouteSettings, ServerSettings, Settings, StorageSettings, SyncSettings


def test_defaults() -> None:
    settings = Settings()

    assert settings.embedding.model == DEFAULT_MODEL
    assert settings.embedding.text == DEFAULT_TEMPLATE
    assert settings.storage.embedded
    assert settings.storage.data_dir() == Path("data")
    assert settings.sync.catalog is None
    assert settings.sync.allow_delete is False
    assert (settings.server.host, settings.server.port) == ("127.0.0.1", 8000)


def test_environment_variables_per_concern(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROUTER_EMBEDDING_TEXT", "name_description_parameters")
    monkeypatch.setenv("ROUTER_EMBEDDING_BATCH_SIZE", "8")
    monkeypatch.setenv("ROUTER_STORAGE_DATA", str(tmp_path))
    monkeypatch.setenv("ROUTER_SYNC_ALLOW_DELETE", "true")
    monkeypatch.setenv("ROUTER_SYNC_CATALOG", str(tmp_path / "catalog"))
    monkeypatch.setenv("ROUTER_PORT", "9001")
    monkeypatch.setenv("ROUTER_LOG_FORMAT", "text")

    settings = Settings()

    assert settings.embedding.text == "name_description_parameters"
    assert settings.embedding.batch_size == 8
    assert settings.storage.data_dir() == tmp_path
    assert settings.sync.allow_delete is True
    assert settings.sync.catalog == tmp_path / "catalog"
    assert settings.server.port == 9001
    assert settings.server.log_format == "text"


def test_search_breadth_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert StorageSettings().hnsw_ef == 1024
    monkeypatch.setenv("ROUTER_STORAGE_HNSW_EF", "256")

    assert StorageSettings().hnsw_ef == 256


def test_unknown_text_template_is_rejected_listing_the_choices() -> None:
    with pytest.raises(ValidationError, match=r"ROUTER_EMBEDDING_TEXT='raw' is unknown; choose one of \["):
        EmbeddingSettings(text="raw")


def test_data_directory_and_qdrant_url_conflict(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"use --data .* or --qdrant-url .*, not both"):
        StorageSettings(data=tmp_path, qdrant_url="http://localhost:6333")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"qdrant_url": "ftp://127.0.0.1:6333"}, "Qdrant is reached over http:// or https://"),
        ({"qdrant_url": "grpc://127.0.0.1:6334"}, "Qdrant is reached over http:// or https://"),
        ({"qdrant_url": "http://q:6333", "timeout": float("inf")}, "timeout"),
        ({"qdrant_url": "http://q:6333", "timeout": 1e308}, "timeout"),
    ],
)
def test_a_qdrant_url_or_timeout_no_client_takes_stops_start_up(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        StorageSettings(**fields)


def test_server_mode_is_not_embedded() -> None:
    assert not StorageSettings(qdrant_url="http://localhost:6333").embedded


@pytest.mark.parametrize(
    ("make", "value"),
    [
        (lambda: EmbeddingSettings(batch_size=0), "batch_size"),
        (lambda: EmbeddingSettings(threads=0), "threads"),
        (lambda: SyncSettings(debounce_ms=-1), "debounce_ms"),
        (lambda: SyncSettings(follow_seconds=0), "follow_seconds"),
        (lambda: ServerSettings(port=70000), "port"),
        (lambda: ServerSettings(log_level="verbose"), "log_level"),
        (lambda: StorageSettings(hnsw_ef=0), "hnsw_ef"),
    ],
)
def test_out_of_range_values_are_rejected(make: object, value: str) -> None:
    with pytest.raises(ValidationError, match=value):
        make()  # type: ignore[operator]


def test_unknown_options_are_rejected() -> None:
    with pytest.raises(ValidationError, match="extra"):
        StorageSettings(path="/tmp/data")  # type: ignore[call-arg]  # noqa: S108


def args(*argv: str) -> Settings:
    return cli.settings_from(cli.parser().parse_args(list(argv)))


def test_flags_override_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROUTER_STORAGE_DATA", "/from/env")
    monkeypatch.setenv("ROUTER_EMBEDDING_TEXT", "name_description_parameters")
    monkeypatch.setenv("ROUTER_PORT", "9001")

    settings = args("serve", "--data", str(tmp_path), "--text", "name_description", "--port", "9002")

    assert settings.storage.data == tmp_path
    assert settings.embedding.text == "name_description"
    assert settings.server.port == 9002


def test_flags_not_given_leave_environment_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROUTER_SYNC_ALLOW_DELETE", "true")
    monkeypatch.setenv("ROUTER_EMBEDDING_TEXT", "name_description_parameters")
    monkeypatch.setenv("ROUTER_PORT", "9001")

    settings = args("serve", "--catalog", str(tmp_path))

    assert settings.sync.allow_delete is True
    assert settings.sync.catalog == tmp_path
    assert settings.embedding.text == "name_description_parameters"
    assert settings.server.port == 9001


def test_sync_flags(tmp_path: Path) -> None:
    settings = args("sync", "--catalog", str(tmp_path), "--data", str(tmp_path / "d"), "--allow-delete")

    assert settings.sync.catalog == tmp_path
    assert settings.sync.allow_delete is True
    assert settings.storage.data == tmp_path / "d"


@pytest.mark.parametrize(
    "argv",
    [
        ["sync", "--catalog", "c", "--data", "d", "--qdrant-url", "http://q"],
        ["serve", "--port", "eighty"],
        ["index"],
        [],
    ],
)
def test_bad_command_lines_exit_with_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.parser().parse_args(argv)

    assert exited.value.code == 2
    assert "usage: router" in capsys.readouterr().err


def test_conflicting_environment_and_flag_exit_2_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUTER_STORAGE_QDRANT_URL", "http://localhost:6333")

    code = cli.main(["sync", "--catalog", str(tmp_path), "--data", str(tmp_path / "d")])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("router: invalid settings: both a data directory and a Qdrant URL are set")
    assert "Value error" not in err
    assert not (tmp_path / "d").exists()


def test_unknown_template_flag_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["sync", "--catalog", str(tmp_path), "--text", "raw"])

    assert exited.value.code == 2
    assert "argument --text: invalid choice: 'raw'" in capsys.readouterr().err


def test_a_bad_flag_value_names_the_flag_and_a_bad_variable_the_variable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flagged = cli.main(["serve", "--data", str(tmp_path / "d"), "--port", "99999"])
    said_of_flag = capsys.readouterr().err
    monkeypatch.setenv("ROUTER_PORT", "99999")
    set_by_variable = cli.main(["serve", "--data", str(tmp_path / "d")])
    said_of_variable = capsys.readouterr().err

    assert flagged == set_by_variable == 2
    assert said_of_flag.startswith("router: invalid settings: --port: Input should be less than or equal to 65535")
    assert said_of_variable.startswith("router: invalid settings: ROUTER_PORT: Input should be less than")


def test_a_check_across_settings_names_the_flag_that_set_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["serve", "--qdrant-url", "ftp://qdrant:6333"])

    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "router: invalid settings: --qdrant-url='ftp://qdrant:6333': Qdrant is reached over http:// or https://"
    )


@pytest.mark.parametrize("command", [["serve"], ["eval", "--cases", "cases.jsonl"]])
def test_the_template_flag_takes_only_the_templates(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main([*command, "--text", "raw"])

    assert exited.value.code == 2
    assert "argument --text: invalid choice: 'raw'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("ROUTER_ROUTE_MAX_FUNCTIONS", "-3", "ROUTER_ROUTE_MAX_FUNCTIONS: Input should be greater than or equal to 1"),
        ("ROUTER_PORT", "abc", "ROUTER_PORT: Input should be a valid integer"),
        ("ROUTER_LOG_LEVEL", "verbose", "ROUTER_LOG_LEVEL: Input should be 'debug', 'info', 'warning' or 'error'"),
        ("ROUTER_ROUTE_ROLES", "[user", "ROUTER_ROUTE_ROLES is not valid JSON"),
        ("ROUTER_EMBEDDING_DEVICE", "gpu", "ROUTER_EMBEDDING_DEVICE: 'gpu' is not a torch device"),
        ("ROUTER_MULTILINGUAL_URL", "http://127.0.0.1:9/v1", "set ROUTER_MULTILINGUAL_MODEL to the model"),
    ],
)
def test_a_bad_variable_is_named_in_one_line(
    variable: str,
    value: str,
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(variable, value)

    code = cli.main(["sync", "--catalog", str(tmp_path), "--data", str(tmp_path / "d")])

    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert err[0].startswith("router: invalid settings: ")
    assert said in err[0]


def test_an_empty_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("ROUTER_SYNC_CATALOG", "ROUTER_API_KEYS_FILE", "ROUTER_ROUTE_MAX_FUNCTIONS", "ROUTER_PORT"):
        monkeypatch.setenv(variable, "")

    settings = Settings()

    assert settings.sync.catalog is None
    assert settings.auth.api_keys_file is None
    assert settings.route.max_functions == RouteSettings.model_fields["max_functions"].default
    assert settings.server.port == ServerSettings.model_fields["port"].default


@pytest.mark.parametrize(
    "argv",
    [
        ["sync", "--catalog", "catalog", "--data", ""],
        ["sync", "--catalog", "", "--data", "data"],
        ["serve", "--qdrant-url", " "],
        ["warm", "--model", ""],
        ["eval", "--cases", "", "--catalog", "catalog"],
        ["mcp", "--namespace", "", "--data", "data"],
    ],
)
def test_an_empty_flag_value_is_refused_not_read_as_the_current_directory(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from router.cli import parser

    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(argv)
    assert stopped.value.code == 2
    assert "must not be empty" in capsys.readouterr().err
