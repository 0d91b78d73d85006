"""API keys: parsing ``ROUTER_API_KEYS``, matching tokens, what a key may use, and where an open API may listen."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from router import cli
from router.api.keys import FULL, Access, ApiKeys, AuthSettings, exposure, is_loopback
from router.common.errors import Forbidden
from router.mcp import cli as mcp_cli
from router.mcp.config import ConfigError

ADMIN = "admin-key-0123456789abcdef"
TRAVEL = "travel-key-0123456789abcdef"
BOTH = "both-key-0123456789abcdefgh"
KEYS = {ADMIN: "*", TRAVEL: ["travel"], BOTH: ["travel", "devops"]}


def test_each_key_grants_its_namespaces() -> None:
    keys = ApiKeys.parse(json.dumps(KEYS))

    assert len(keys) == 3
    assert keys.unrestricted == 1
    assert keys.match(ADMIN) == FULL
    assert keys.match(TRAVEL) == Access(frozenset({"travel"}))
    assert keys.match(BOTH.encode()) == Access(frozenset({"travel", "devops"}))


@pytest.mark.parametrize("token", ["", "nope", ADMIN[:-1], ADMIN + "x", ADMIN.upper(), f" {ADMIN}", "é" * 20])
def test_a_token_that_is_no_key_matches_nothing(token: str) -> None:
    assert ApiKeys.parse(json.dumps(KEYS)).match(token) is None


def test_a_single_namespace_may_be_a_string_and_star_a_list() -> None:
    keys = ApiKeys.parse(json.dumps({TRAVEL: "travel", ADMIN: ["*"]}))

    assert keys.match(TRAVEL) == Access(frozenset({"travel"}))
    assert keys.match(ADMIN) == FULL


def test_keys_stay_out_of_the_repr() -> None:
    keys = ApiKeys.parse(json.dumps(KEYS))
    settings = AuthSettings(api_keys=json.dumps(KEYS))

    assert ADMIN not in repr(keys)
    assert ADMIN not in repr(settings)
    assert ADMIN not in str(settings.model_dump())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"' + ADMIN + '": "*",', "ROUTER_API_KEYS is not valid JSON (Expecting property name"),
        ("[]", "ROUTER_API_KEYS must be a JSON object of keys"),
        ("{}", "ROUTER_API_KEYS must be a JSON object of keys"),
        ('{"short": "*"}', "key #1 must be 16 to 256 printable ASCII characters without spaces"),
        ('{"' + ADMIN + '": "*", "with a space in it 1234": "*"}', "key #2 must be 16 to 256 printable ASCII"),
        ('{"' + ADMIN + '": []}', 'key #1 must grant "*" or a non-empty list of namespaces'),
        ('{"' + ADMIN + '": 42}', 'key #1 must grant "*" or a non-empty list of namespaces'),
        ('{"' + ADMIN + '": ["*", "travel"]}', 'key #1 grants "*" and namespaces'),
        ('{"' + ADMIN + '": ["a/b"]}', "key #1: namespace 'a/b' must match"),
        ('{"' + TRAVEL + '": "travel", "' + TRAVEL + '": "*"}', "key #2 appears twice"),
    ],
)
def test_invalid_keys_say_what_and_where_without_quoting_a_key(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="ROUTER_API_KEYS") as caught:
        ApiKeys.parse(text)

    assert message in str(caught.value)
    for key in (ADMIN, TRAVEL, "short", "with a space"):
        assert key not in str(caught.value)


@pytest.mark.parametrize("value", ['{"' + ADMIN + '": ["a/b"]}', '{"' + ADMIN + '": "*"', '{"' + ADMIN + '": []}'])
def test_settings_errors_quote_no_part_of_a_key(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_API_KEYS", value)

    with pytest.raises(ValidationError) as caught:
        AuthSettings()

    shown = f"{caught.value}\n{caught.value!r}"  # what a traceback or a log line would show
    assert "ROUTER_API_KEYS" in shown
    assert ADMIN[:6] not in shown
    assert ADMIN[-6:] not in shown


def test_access_checks_namespaces() -> None:
    travel = Access(frozenset({"travel"}))

    FULL.check("anything")
    FULL.check(None)
    travel.check("travel")
    assert travel.allows("travel")
    assert not travel.allows("devops")
    with pytest.raises(Forbidden, match="namespace: this API key may not use namespace 'devops'"):
        travel.check("devops")
    with pytest.raises(Forbidden, match=r"namespace: this API key is limited to \['travel'\]; name one of them"):
        travel.check(None)


def test_settings_read_keys_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_API_KEYS", json.dumps(KEYS))

    keys = AuthSettings().keys

    assert keys is not None
    assert keys.match(TRAVEL) == Access(frozenset({"travel"}))


def test_settings_read_keys_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(KEYS))

    keys = AuthSettings(api_keys_file=path).keys

    assert keys is not None
    assert len(keys) == 3


def test_blank_keys_mean_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTER_API_KEYS", "  ")

    assert AuthSettings().keys is None


def test_keys_in_both_places_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="both ROUTER_API_KEYS and ROUTER_API_KEYS_FILE are set"):
        AuthSettings(api_keys=json.dumps(KEYS), api_keys_file=tmp_path / "keys.json")


def test_an_unreadable_keys_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"ROUTER_API_KEYS_FILE=.*missing.json: No such file"):
        AuthSettings(api_keys_file=tmp_path / "missing.json")


def test_invalid_keys_stop_start_up_with_a_clear_message(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ROUTER_API_KEYS", '{"' + ADMIN + '": ["travel"]')

    assert cli.main(["serve"]) == 2

    err = capsys.readouterr().err
    assert "router: invalid settings: ROUTER_API_KEYS is not valid JSON" in err
    assert ADMIN not in err


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.1.2.3", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),  # noqa: S104
        ("::", False),
        ("192.168.1.10", False),
        ("router.example.com", False),
    ],
)
def test_loopback_hosts(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_without_keys_the_api_may_only_listen_on_loopback() -> None:
    open_auth = AuthSettings()

    local, allowed = exposure("127.0.0.1", open_auth)
    assert allowed
    assert local == "no API keys configured (ROUTER_API_KEYS): the API is unauthenticated, bound to loopback 127.0.0.1"

    refused, allowed = exposure("0.0.0.0", open_auth)  # noqa: S104
    assert not allowed
    assert "would be open to anyone who reaches 0.0.0.0" in refused
    assert "--allow-unauthenticated" in refused

    opened, allowed = exposure("0.0.0.0", AuthSettings(allow_unauthenticated=True))  # noqa: S104
    assert allowed
    assert "unauthenticated and bound to 0.0.0.0, allowed by ROUTER_ALLOW_UNAUTHENTICATED" in opened


def test_with_keys_the_api_may_listen_anywhere() -> None:
    summary, allowed = exposure("0.0.0.0", AuthSettings(api_keys=json.dumps(KEYS)))  # noqa: S104

    assert allowed
    assert summary == "API keys required on /v1 (3 configured, 1 for every namespace); /healthz and /readyz stay open"


def test_serve_refuses_an_open_api_beyond_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--host", "0.0.0.0"]) == 2  # noqa: S104

    assert "router serve: no API keys are configured" in capsys.readouterr().err


def test_allow_unauthenticated_flag_and_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    flag = cli.settings_from(cli.parser().parse_args(["serve", "--allow-unauthenticated"]))
    monkeypatch.setenv("ROUTER_ALLOW_UNAUTHENTICATED", "true")
    variable = cli.settings_from(cli.parser().parse_args(["serve"]))
    monkeypatch.delenv("ROUTER_ALLOW_UNAUTHENTICATED")
    default = cli.settings_from(cli.parser().parse_args(["serve"]))

    assert flag.auth.allow_unauthenticated
    assert variable.auth.allow_unauthenticated
    assert not default.auth.allow_unauthenticated


def test_router_mcp_takes_the_key_of_a_running_router_from_its_flag_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parser = argparse.ArgumentParser()
    mcp_cli.configure(parser)
    remote = ["--url", "http://127.0.0.1:8000", "--namespace", "travel"]

    flag = mcp_cli.options(parser.parse_args([*remote, "--api-key", TRAVEL]))
    monkeypatch.setenv("ROUTER_API_KEY", BOTH)
    variable = mcp_cli.options(parser.parse_args(remote))
    both = mcp_cli.options(parser.parse_args([*remote, "--api-key", TRAVEL]))
    local = mcp_cli.options(parser.parse_args(["--namespace", "travel"]))

    assert (flag.api_key, variable.api_key, both.api_key, local.api_key) == (TRAVEL, BOTH, TRAVEL, None)
    with pytest.raises(ConfigError, match="--api-key is the key of a running router: give its --url"):
        mcp_cli.options(parser.parse_args(["--namespace", "travel", "--api-key", TRAVEL]))


def test_a_limited_key_sees_only_its_namespaces_behind_in_the_status() -> None:
    from types import SimpleNamespace

    from router.api.status import _multilingual

    catalogs = SimpleNamespace(multilingual=None, behind={"travel", "ops"})
    service: Any = SimpleNamespace(multilingual=SimpleNamespace(model="m"), catalogs=catalogs)
    assert _multilingual(service, Access(frozenset({"ops"})))["behind"] == ["ops"]
    assert _multilingual(service, FULL)["behind"] == ["ops", "travel"]
