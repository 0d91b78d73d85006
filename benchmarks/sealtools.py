"""Seal-Tools' development split, loaded as one catalog of generated tools and the requests that need them.

The data lives outside the project, in ``../shared/data/sealtools-dev/`` (``SEALTOOLS_DIR``
overrides; the shared folder is looked for beside the project and beside each of its parents,
so a git worktree finds it too).

What is loaded:

- **Functions**: every line of ``tool.jsonl`` (4,076 tools across many fields). The name is the
  ``api_name`` made valid: spaces are dropped and the next word capitalised, keeping the
  camelCase of the rest (``requestFirst Aid Assistance`` -> ``requestFirstAidAssistance``); the
  description is ``api_description``; ``parameters`` and ``required`` become a JSON schema
  (``str``/``int``/``float``/``bool`` -> ``string``/``integer``/``number``/``boolean``).
- **Questions**: every request of ``dev.jsonl`` (700: 200 ``dev-easy`` needing one tool, 500
  ``dev-difficult`` most of which name several steps). The expected functions are the ``api``
  names of ``calling``, cleaned the same way, each once, in call order; the category is the
  id's prefix (``dev-easy`` / ``dev-difficult``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.bfcl import BfclQuestion
from router.catalog.functions import NAME_PATTERN, FunctionDef, parse_function

_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_SPACES = re.compile(r"\s+(\S)")
_INVALID = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class SealTools:
    """The catalog and its development requests (``category`` is ``dev-easy`` or ``dev-difficult``)."""

    functions: list[FunctionDef]
    questions: list[BfclQuestion]


def data_dir() -> Path:
    """The ``sealtools-dev`` folder of the shared data."""
    override = os.environ.get("SEALTOOLS_DIR")
    if override:
        return Path(override)
    root = Path(__file__).resolve().parent.parent
    for base in (root, *root.parents):
        found = base.parent / "shared" / "data" / "sealtools-dev"
        if found.is_dir():
            return found
    raise FileNotFoundError("no shared/data/sealtools-dev beside the project or its parents; set SEALTOOLS_DIR")


def clean_name(name: str) -> str:
    """A valid function name from a Seal-Tools ``api_name``: camelCase across the spaces."""
    joined = _SPACES.sub(lambda m: m.group(1).upper(), name.strip())
    return _INVALID.sub("_", joined)[:64] or "api"


def _lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    raw = tool.get("parameters")
    for name, spec in raw.items() if isinstance(raw, Mapping) else ():
        key = _INVALID.sub("_", str(name)).strip("_")
        if not key or not NAME_PATTERN.fullmatch(key):
            continue
        spec = spec if isinstance(spec, Mapping) else {}
        entry: dict[str, Any] = {"type": _TYPES.get(str(spec.get("type")), "string")}
        if isinstance(spec.get("description"), str):
            entry["description"] = spec["description"]
        properties[key] = entry
    required = [str(r) for r in tool.get("required") or () if str(r) in properties]
    return {"type": "object", "properties": properties, **({"required": required} if required else {})}


@cache
def load(root: Path | None = None) -> SealTools:
    """The catalog (4,076 functions) and its development requests (700)."""
    root = root or data_dir()
    functions: list[FunctionDef] = []
    taken: set[str] = set()
    for tool in _lines(root / "tool.jsonl"):
        name = clean_name(str(tool["api_name"]))
        if name in taken:
            continue
        taken.add(name)
        raw = {"name": name, "description": str(tool.get("api_description") or ""), "parameters": _schema(tool)}
        functions.append(parse_function(raw, where=f"tool.jsonl: {name}"))
    questions: list[BfclQuestion] = []
    for record in _lines(root / "dev.jsonl"):
        expected = tuple(dict.fromkeys(clean_name(str(c["api"])) for c in record.get("calling") or ()))
        identifier = str(record["id"])
        message = {"role": "user", "content": str(record["query"])}
        questions.append(BfclQuestion(identifier, identifier.rsplit("-", 1)[0], (message,), expected))
    return SealTools(functions, questions)
