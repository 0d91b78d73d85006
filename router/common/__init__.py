"""What every layer shares: the error family, the text of chat messages and the package's version."""

from __future__ import annotations

from importlib import metadata


def version() -> str:
    """The installed ``tool-router`` package's version ("0.0.0" when it is not installed)."""
    try:
        return metadata.version("tool-router")
    except metadata.PackageNotFoundError:
        return "0.0.0"
