"""The Berkeley Function Calling Leaderboard (BFCL) data, read from the installed ``bfcl-eval`` package's ``data/``.

- **Functions**: every definition of every category (the single-turn files and
  ``multi_turn_func_doc/``), pooled in a fixed order (8,888 in BFCL v4); ``dedupe_by_name`` keeps
  the first variant of each name (1,998), a valid catalog.
- **Questions**: every answered single-turn question (2,501), its user messages only, and the
  names of the functions it expects. The ``live_*`` categories (1,351) are held out: develop on
  the others, report on them last.

Normalised so that ``router.catalog.parse_function`` accepts every definition: ``"type": "dict"``
becomes ``"object"`` at every depth, only ``name``/``description``/``parameters`` are kept, and a
name outside ``^[A-Za-z0-9_.-]{1,64}$`` is sanitised deterministically (invalid characters to
``_``; a name over 64 characters cut to 55 and suffixed with 8 hex digits of its SHA-1), in the
answers too. An empty name is skipped.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from router.catalog.functions import NAME_PATTERN, FunctionDef, parse_function

FILE_PREFIX = "BFCL_v4_"
HELD_OUT_PREFIX = "live_"
MULTI_TURN_DOCS = "multi_turn_func_doc"
_INVALID = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class BfclFunction:
    """One function definition as found in BFCL, normalised.

    Attributes:
        name: the (sanitised) name, valid for the router.
        description: what it does.
        parameters: its JSON-schema object, with ``dict`` types turned into ``object``.
        category: where it was found: ``simple_python``, ``live_multiple``, ...,
            or ``multi_turn_func_doc/<api>`` for the multi-turn API docs.
        source_id: the id of the question it came with ("" for the multi-turn docs).
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    category: str
    source_id: str = ""

    def definition(self) -> dict[str, Any]:
        """The function in the router's bare shape ``{"name", "description", "parameters"}``."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def to_function_def(self) -> FunctionDef:
        """The function validated by the router's own parser."""
        return parse_function(self.definition(), where=f"bfcl {self.category}: {self.name}")


@dataclass(frozen=True)
class BfclQuestion:
    """One answered single-turn question.

    Attributes:
        id: BFCL's id, e.g. ``simple_python_0``.
        category: its category, e.g. ``simple_python``.
        messages: its user messages (``{"role": "user", "content": ...}``), in order.
        expected: the (sanitised) names of the functions the answer calls, each once, in order.
    """

    id: str
    category: str
    messages: tuple[Mapping[str, str], ...]
    expected: tuple[str, ...]

    @property
    def text(self) -> str:
        """The user messages joined by newlines."""
        return "\n".join(m["content"] for m in self.messages)

    @property
    def held_out(self) -> bool:
        """Whether it belongs to a held-out (``live_*``) category."""
        return is_held_out(self.category)


def is_held_out(category: str) -> bool:
    """Whether a category is reserved as the held-out test set (the ``live_*`` ones)."""
    return category.startswith(HELD_OUT_PREFIX)


@cache
def data_dir() -> Path:
    """The ``data/`` directory of the installed ``bfcl-eval`` package (not imported)."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("bfcl-eval is not installed: run `make bench-quality` (it installs it with --no-deps)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data"
    if not path.is_dir():
        raise RuntimeError(f"bfcl-eval has no data directory at {path}")
    return path


def sanitise_name(name: str) -> str:
    """A name valid for the router, derived deterministically from a BFCL name ("" if empty)."""
    if NAME_PATTERN.match(name):
        return name
    cleaned = _INVALID.sub("_", name)
    if len(cleaned) > 64:
        digest = hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:8]
        cleaned = f"{cleaned[:55]}_{digest}"
    return cleaned


def _normalise_schema(value: Any) -> Any:
    """Turn every ``"type": "dict"`` into ``"object"``; property names are left untouched."""
    if isinstance(value, Mapping):
        return {
            key: "object" if key == "type" and item == "dict" else _normalise_schema(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_normalise_schema(item) for item in value]
    return value


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _category_files(root: Path) -> list[tuple[str, Path]]:
    """``(category, path)`` of every JSON-lines category file, sorted by category."""
    found = []
    for path in sorted(root.glob(f"{FILE_PREFIX}*.json")):
        category = path.stem.removeprefix(FILE_PREFIX)
        if category == "format_sensitivity":  # one JSON object listing ids, not questions
            continue
        found.append((category, path))
    return found


def _function(raw: Mapping[str, Any], category: str, source_id: str) -> BfclFunction | None:
    name = sanitise_name(str(raw.get("name", "")))
    if not name:
        return None
    parameters = _normalise_schema(raw.get("parameters") or {"type": "object", "properties": {}})
    return BfclFunction(name, str(raw.get("description") or ""), parameters, category, source_id)


def load_functions(root: Path | None = None) -> list[BfclFunction]:
    """Every function definition of every category, pooled (8,888 in BFCL v4), in a fixed order.

    Args:
        root: the BFCL data directory; the installed package's when None.
    """
    root = root or data_dir()
    functions: list[BfclFunction] = []
    for category, path in _category_files(root):
        for record in _records(path):
            for raw in record.get("function") or []:
                function = _function(raw, category, str(record["id"]))
                if function is not None:
                    functions.append(function)
    for path in sorted((root / MULTI_TURN_DOCS).glob("*.json")):
        for raw in _records(path):
            function = _function(raw, f"{MULTI_TURN_DOCS}/{path.stem}", "")
            if function is not None:
                functions.append(function)
    return functions


def dedupe_by_name(functions: Sequence[BfclFunction]) -> list[BfclFunction]:
    """One function per name, the first variant kept (1,998 in BFCL v4): a valid catalog."""
    seen: set[str] = set()
    kept = []
    for function in functions:
        if function.name not in seen:
            seen.add(function.name)
            kept.append(function)
    return kept


def _expected(ground_truth: Any) -> tuple[str, ...] | None:
    """Names called by a single-turn answer, or None when it is not a list of calls."""
    if not isinstance(ground_truth, list) or not ground_truth:
        return None
    names: list[str] = []
    for call in ground_truth:
        if not isinstance(call, Mapping):
            return None
        for raw_name in call:
            name = sanitise_name(str(raw_name))
            if name not in names:
                names.append(name)
    return tuple(names)


def load_questions(root: Path | None = None, *, held_out: bool | None = None) -> list[BfclQuestion]:
    """Every answered single-turn question (2,501 in BFCL v4: 1,150 development, 1,351 held out).

    Args:
        root: the BFCL data directory; the installed package's when None.
        held_out: True for the ``live_*`` categories only, False for the others, None for all.
    """
    root = root or data_dir()
    questions: list[BfclQuestion] = []
    for category, path in _category_files(root):
        answers_path = root / "possible_answer" / path.name
        if category.startswith("multi_turn") or not answers_path.exists():
            continue
        if held_out is not None and is_held_out(category) != held_out:
            continue
        answers = {str(a["id"]): a.get("ground_truth") for a in _records(answers_path)}
        for record in _records(path):
            turns = record.get("question") or []
            expected = _expected(answers.get(str(record["id"])))
            if len(turns) != 1 or expected is None:
                continue
            messages = tuple(
                {"role": "user", "content": str(m["content"])} for m in turns[0] if m.get("role") == "user"
            )
            if messages:
                questions.append(BfclQuestion(str(record["id"]), category, messages, expected))
    return questions
