"""Upstream MCP servers from the command line (``--upstream NAME=...``) or a file (``--upstreams FILE``).

The file is YAML or JSON: a mapping of upstream names under ``upstreams`` (or ``mcpServers``,
so an MCP client's configuration file can be reused as it is)::

    upstreams:
      weather:
        command: python
        args: [tests/integration/mcp_fixture_server.py]
        env: {UNITS: metric}
        namespace: weather       # default: the upstream's name
        resync_seconds: 300      # default: --resync-seconds
      docs:
        url: http://127.0.0.1:9000/mcp
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from router.common.documents import yaml_problem
from router.common.errors import RouterError
from sync.upstream import UpstreamConfig

_KEYS = {"command", "args", "env", "cwd", "url", "namespace", "resync_seconds", "timeout_seconds", "type"}
_TYPES = {"stdio", "http", "streamable-http", "streamableHttp"}


class ConfigError(ValueError):
    """An upstream is misconfigured; the message says where and what to change."""


def parse_upstream(spec: str, *, resync_seconds: float = 300.0) -> UpstreamConfig:
    """``NAME=URL`` (``http://``, ``https://``) or ``NAME=COMMAND [ARGS...]`` (split as a shell would).

    Raises:
        ConfigError: naming the flag value.
    """
    name, equals, target = spec.partition("=")
    target = target.strip()
    if not equals or not target:
        raise ConfigError(f"--upstream {spec!r}: expected NAME=COMMAND [ARGS...] or NAME=URL")
    try:
        if target.startswith(("http://", "https://")):
            return UpstreamConfig(name.strip(), url=target, resync_seconds=resync_seconds)
        words = shlex.split(target)
        return UpstreamConfig(name.strip(), command=words[0], args=tuple(words[1:]), resync_seconds=resync_seconds)
    except (ValueError, RouterError) as exc:
        raise ConfigError(f"--upstream {spec!r}: {_reason(exc)}") from exc


def _reason(exc: Exception) -> str:
    return exc.detail if isinstance(exc, RouterError) else str(exc)


def _upstream(name: str, spec: Any, *, where: str, resync_seconds: float) -> UpstreamConfig:
    if not isinstance(spec, Mapping):
        raise ConfigError(f"{where}: must be a mapping with a command or a url")
    unknown = sorted(set(spec) - _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}; expected some of {sorted(_KEYS)}")
    if spec.get("type", "stdio") not in _TYPES:
        raise ConfigError(f"{where}.type: {spec['type']!r} is not supported; use stdio or streamable HTTP")
    env = spec.get("env") or {}
    if not isinstance(env, Mapping):
        raise ConfigError(f"{where}.env: must map variable names to values")
    args = spec.get("args", [])
    if not isinstance(args, list) or not all(isinstance(v, str | int | float) for v in args):
        raise ConfigError(f"{where}.args: must be a list of strings")
    try:
        return UpstreamConfig(
            str(name),
            command=spec.get("command"),
            args=tuple(str(v) for v in args),
            env={str(k): str(v) for k, v in env.items()},
            cwd=spec.get("cwd"),
            url=spec.get("url"),
            namespace=spec.get("namespace"),
            resync_seconds=float(spec.get("resync_seconds", resync_seconds)),
            timeout_seconds=float(spec.get("timeout_seconds", 60.0)),
        )
    except (ValueError, TypeError, RouterError) as exc:
        raise ConfigError(f"{where}: {_reason(exc)}") from exc


def load_upstreams(path: Path, *, resync_seconds: float = 300.0) -> list[UpstreamConfig]:
    """Read the upstreams of a YAML or JSON file.

    Raises:
        ConfigError: naming the file and the key at fault.
    """
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: cannot be parsed: {yaml_problem(exc)}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from exc
    key = next((k for k in ("upstreams", "mcpServers") if isinstance(document, Mapping) and k in document), None)
    if key is None or not isinstance(document[key], Mapping):
        raise ConfigError(f"{path}: expected a mapping 'upstreams' (or 'mcpServers') of names to servers")
    return [
        _upstream(name, spec, where=f"{path}: {key}.{name}", resync_seconds=resync_seconds)
        for name, spec in document[key].items()
    ]
