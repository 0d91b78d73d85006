"""One upstream MCP server as configured: how to reach it and where its tools are stored."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from router.catalog.functions import validate_namespace


@dataclass(frozen=True)
class UpstreamConfig:
    """One upstream MCP server: a stdio command or a streamable HTTP URL.

    Attributes:
        name: the upstream's name; its namespace unless ``namespace`` is set.
        command: the executable that serves MCP on stdio.
        args: its arguments.
        env: extra environment variables for the command.
        cwd: the command's working directory (default: the router's).
        url: the streamable HTTP endpoint (``http://host:port/mcp``).
        namespace: the namespace its tools are stored in (default: ``name``).
        resync_seconds: how often the tools are listed again without a change notification.
        timeout_seconds: the bound of connecting, listing and every forwarded call.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    namespace: str | None = None
    resync_seconds: float = 300.0
    timeout_seconds: float = 60.0

    def __post_init__(self) -> None:
        validate_namespace(self.name, source=f"upstream {self.name!r}")
        validate_namespace(self.target, source=f"upstream {self.name!r}: namespace")
        if (self.command is None) == (self.url is None):
            raise ValueError(f"upstream {self.name!r}: give exactly one of a command or a url")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"upstream {self.name!r}: url {self.url!r} must start with http:// or https://")
        if self.resync_seconds <= 0 or self.timeout_seconds <= 0:
            raise ValueError(f"upstream {self.name!r}: resync_seconds and timeout_seconds must be positive")

    @property
    def target(self) -> str:
        """The namespace the upstream's tools are stored in."""
        return self.namespace or self.name

    def describe(self) -> str:
        """The URL, or the command line."""
        return self.url or shlex.join([self.command or "", *self.args])
