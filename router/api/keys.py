"""API keys and what each may use: parsing ``ROUTER_API_KEYS``, matching a bearer token, the bind rule.

A key grants every namespace (``"*"``) or a list of them. Keys are compared in constant time
and never appear in an error message, a log line or a ``repr``: configuration errors name a
key by its position.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pydantic import Field, PrivateAttr, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from router.api.schemas import NAMESPACE
from router.common.errors import Forbidden

ALL = "*"
KEY_PATTERN = re.compile(r"[\x21-\x7e]{16,256}")
_NAMESPACE = re.compile(NAMESPACE)


@dataclass(frozen=True)
class Access:
    """What one request may use: every namespace (``namespaces is None``) or the ones listed."""

    namespaces: frozenset[str] | None = None

    def allows(self, namespace: str) -> bool:
        """Whether ``namespace`` may be used."""
        return self.namespaces is None or namespace in self.namespaces

    def check(self, namespace: str | None, *, field: str = "namespace") -> None:
        """Raise ``Forbidden`` unless ``namespace`` may be used (``None`` stands for every namespace)."""
        if self.namespaces is None:
            return
        if namespace is None:
            raise Forbidden(
                f"{field}: this API key is limited to {sorted(self.namespaces)}; name one of them", field=field
            )
        if namespace not in self.namespaces:
            raise Forbidden(f"{field}: this API key may not use namespace {namespace!r}", field=field)


FULL = Access()


class ApiKeys:
    """The configured keys, each with the namespaces it grants.

    Args:
        grants: each key and its namespaces (``None`` for every namespace).
    """

    def __init__(self, grants: Mapping[str, frozenset[str] | None]) -> None:
        # Only digests are kept: comparing them takes the same time whatever the token's length.
        self._grants = [(_digest(key.encode()), Access(namespaces)) for key, namespaces in grants.items()]

    def __len__(self) -> int:
        return len(self._grants)

    def __repr__(self) -> str:
        return f"ApiKeys({len(self)} keys)"

    @property
    def unrestricted(self) -> int:
        """How many keys grant every namespace."""
        return sum(access.namespaces is None for _, access in self._grants)

    def match(self, token: str | bytes) -> Access | None:
        """The access ``token`` grants, or None when it is no configured key.

        Every key is compared, in constant time, so the time taken tells nothing about which
        key came close.
        """
        candidate = _digest(token if isinstance(token, bytes) else token.encode("utf-8", "surrogateescape"))
        found: Access | None = None
        for key, access in self._grants:
            if hmac.compare_digest(key, candidate):
                found = access
        return found

    @classmethod
    def parse(cls, text: str, *, source: str = "ROUTER_API_KEYS") -> ApiKeys:
        """Read a JSON object mapping each key to ``"*"``, a namespace, or a list of namespaces.

        Raises:
            ValueError: saying what is wrong and where, never quoting a key.
        """
        try:
            document = json.loads(text, object_pairs_hook=partial(_no_duplicates, source))
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno} column {exc.colno}"
            raise ValueError(f"{source} is not valid JSON ({exc.msg} at {where})") from None
        if not isinstance(document, dict) or not document:
            raise ValueError(f'{source} must be a JSON object of keys, e.g. {{"<key>": ["travel"], "<key2>": "*"}}')
        grants: dict[str, frozenset[str] | None] = {}
        for position, (key, value) in enumerate(document.items(), start=1):
            if not KEY_PATTERN.fullmatch(key):
                raise ValueError(
                    f"{source}: key #{position} must be 16 to 256 printable ASCII characters without spaces"
                )
            grants[key] = _namespaces(value, where=f"{source}: key #{position}")
        return cls(grants)


def _digest(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()


def _namespaces(value: Any, *, where: str) -> frozenset[str] | None:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f'{where} must grant "*" or a non-empty list of namespaces')
    if ALL in names:
        if len(names) > 1:
            raise ValueError(f'{where} grants "*" and namespaces; "*" alone grants every namespace')
        return None
    for name in names:
        if not _NAMESPACE.fullmatch(name):
            raise ValueError(f"{where}: namespace {name!r} must match {NAMESPACE}")
    return frozenset(names)


def _no_duplicates(source: str, pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for position, (key, value) in enumerate(pairs, start=1):
        if key in result:
            raise ValueError(f"{source}: key #{position} appears twice")
        result[key] = value
    return result


class AuthSettings(BaseSettings):
    """Who may call the HTTP API, and where an API without keys may listen."""

    # Validation errors would otherwise quote the raw value, keys included.
    model_config = SettingsConfigDict(
        env_prefix="ROUTER_", extra="ignore", hide_input_in_errors=True, env_ignore_empty=True
    )

    api_keys: SecretStr | None = Field(None, description='JSON: each key to "*" or a list of namespaces')
    api_keys_file: Path | None = Field(None, description="a file holding that JSON instead")
    allow_unauthenticated: bool = Field(False, description="serve without keys on a host other than loopback")
    _keys: ApiKeys | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _read_keys(self) -> AuthSettings:
        text = self.api_keys.get_secret_value().strip() if self.api_keys is not None else ""
        if text and self.api_keys_file is not None:
            raise ValueError("both ROUTER_API_KEYS and ROUTER_API_KEYS_FILE are set; keep one")
        if self.api_keys_file is not None:
            try:
                text = self.api_keys_file.read_text(encoding="utf-8")
            except OSError as exc:
                raise ValueError(f"ROUTER_API_KEYS_FILE={self.api_keys_file}: {exc.strerror}") from None
            self._keys = ApiKeys.parse(text, source=f"ROUTER_API_KEYS_FILE={self.api_keys_file}")
        elif text:
            self._keys = ApiKeys.parse(text)
        return self

    @property
    def keys(self) -> ApiKeys | None:
        """The configured keys; None when the API is open."""
        return self._keys


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def exposure(host: str, auth: AuthSettings) -> tuple[str, bool]:
    """How the API will be exposed on ``host``: a sentence for the log, and whether that is allowed.

    Without keys the API is open to whoever reaches it, so it may only listen on loopback unless
    ``ROUTER_ALLOW_UNAUTHENTICATED`` says otherwise.
    """
    keys = auth.keys
    if keys is not None:
        every = f", {keys.unrestricted} for every namespace" if keys.unrestricted else ""
        return f"API keys required on /v1 ({len(keys)} configured{every}); /healthz and /readyz stay open", True
    if is_loopback(host):
        return f"no API keys configured (ROUTER_API_KEYS): the API is unauthenticated, bound to loopback {host}", True
    if auth.allow_unauthenticated:
        return (
            f"no API keys configured (ROUTER_API_KEYS): the API is unauthenticated and bound to {host}, "
            "allowed by ROUTER_ALLOW_UNAUTHENTICATED",
            True,
        )
    return (
        f"no API keys are configured, so the API would be open to anyone who reaches {host}; "
        "set ROUTER_API_KEYS (or ROUTER_API_KEYS_FILE), bind to 127.0.0.1, or pass --allow-unauthenticated "
        "(ROUTER_ALLOW_UNAUTHENTICATED=true) to serve it without keys on purpose",
        False,
    )
