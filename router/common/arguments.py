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
