"""Command-line values that must say something: an empty one is refused, not read as the current directory."""

from __future__ import annotations

import argparse
from pathlib import Path


def text(value: str) -> str:
    """A flag's text, refused when empty ("--model ''" names no model)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def path(value: str) -> Path:
    """A flag's path, refused when empty: ``Path("")`` is the current directory ("--data ''" wrote there)."""
    return Path(text(value))


def not_a_directory(path: Path) -> str | None:
    """What is wrong with a directory flag's ``path`` ("does not exist", "is not a directory"), or None."""
    if path.is_dir():
        return None
    return "is not a directory" if path.exists() else "does not exist"


def port(value: str) -> int:
    """A TCP port, 1 to 65535: the address lookup reads 99999 as another port, and -1 as a bad host."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 1 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"{number} is not a port: give 1 to 65535")
    return number
