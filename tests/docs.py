"""The examples of the documentation, read from its markdown files so that tests run them as written.

A section is everything under a ``## Title`` line up to the next ``## `` line (its ``###``
subsections included); a marked block is the fenced block right after ``<!-- test: NAME -->``.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ROOT", "fenced", "marked", "section"]

ROOT = Path(__file__).resolve().parent.parent


def section(path: Path, title: str) -> str:
    """The text of the ``## title`` section of ``path``."""
    text = path.read_text()
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"no '## {title}' section in {path}"
    return match.group(1)


def fenced(path: Path, title: str, language: str = "python") -> list[str]:
    """The fenced blocks of one language in the ``## title`` section of ``path``, in order."""
    return re.findall(rf"^```{re.escape(language)}\n(.*?)^```", section(path, title), re.MULTILINE | re.DOTALL)


def marked(path: Path, name: str) -> str:
    """The fenced block of ``path`` marked ``<!-- test: name -->``."""
    match = re.search(rf"<!-- test: {re.escape(name)} -->\n```\w+\n(.*?)^```", path.read_text(), re.S | re.M)
    assert match, f"no block marked 'test: {name}' in {path}"
    return match.group(1)
