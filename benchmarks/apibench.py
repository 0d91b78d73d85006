"""Gorilla APIBench, loaded as one catalog of model APIs and the instructions that ask for them.

The data lives outside the project, in ``../shared/data/apibench/`` (``APIBENCH_DIR`` overrides;
the shared folder is looked for beside the project and beside each of its parents, so a git
worktree finds it too). It holds three hubs (Hugging Face, TensorFlow Hub, Torch Hub).

What is loaded:

- **Functions**: one per distinct ``api_call`` (1,066 of the 1,726 API entries: TensorFlow Hub
  lists the same model URL under several names), the first entry kept. The function's name
  is its ``api_name`` made valid (``YituTech/conv-bert-base`` -> ``YituTech_conv-bert-base``,
  ``_2``, ``_3``... when names repeat); its description is ``"<domain>. <functionality>.
  <description>"``: the task family, what the model does and the model card's summary, which
  is what a person choosing a model reads. ``api_arguments``, ``example_code`` and
  ``performance`` stay out of the description (code and accuracy tables, not purpose); the
  arguments become parameters when they are a list or mapping of names.
- **Questions**: every instruction of ``*_eval.json``: the text after ``###Instruction:`` up
  to ``###Output:``. Everything after ``###Output:`` is the answer and is never read as a
  request. The expected function is the one whose ``api_call`` equals the answer's (spaces
  and quotes ignored); answers that add arguments to a catalog call
  (``..., torch_dtype=torch.float16)``) match the catalog call they extend.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from benchmarks.bfcl import BfclQuestion
from router.catalog.functions import NAME_PATTERN, FunctionDef, parse_function

# (api file, eval file, category) per hub.
HUBS = (
    ("huggingface_api.jsonl", "huggingface_eval.json", "huggingface"),
    ("tensorflowhub_api.jsonl", "tensorflow_eval.json", "tensorflowhub"),
    ("torchhub_api.jsonl", "torchhub_eval.json", "torchhub"),
)
_INSTRUCTION = re.compile(r"###\s*Instruction:\s*(.*?)\s*###\s*Output:", re.DOTALL)
_INVALID = re.compile(r"[^A-Za-z0-9_.-]+")
_LOOSE = re.compile(r"[\s\"']")


@dataclass(frozen=True)
class ApiBench:
    """The catalog and its questions (``category`` is the hub)."""

    functions: list[FunctionDef]
    questions: list[BfclQuestion]
    unmatched: int


def data_dir() -> Path:
    """The ``apibench`` folder of the shared data."""
    override = os.environ.get("APIBENCH_DIR")
    if override:
        return Path(override)
    root = Path(__file__).resolve().parent.parent
    for base in (root, *root.parents):
        found = base.parent / "shared" / "data" / "apibench"
        if found.is_dir():
            return found
    raise FileNotFoundError("no shared/data/apibench beside the project or its parents; set APIBENCH_DIR")


def _lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _parameters(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, Mapping):
        names = [str(k) for k in arguments]
    elif isinstance(arguments, list):
        names = [str(a) for a in arguments if isinstance(a, str)]
    else:
        names = []
    properties = {
        cleaned: {"type": "string"}
        for name in names
        if (cleaned := _INVALID.sub("_", name).strip("_")) and NAME_PATTERN.fullmatch(cleaned)
    }
    return {"type": "object", "properties": properties}


def _description(api: Mapping[str, Any]) -> str:
    parts = [_text(api.get("domain")), _text(api.get("functionality")), _text(api.get("description"))]
    return " ".join(p if p.endswith(".") else f"{p}." for p in parts if p)


def _name(api_name: str, taken: set[str]) -> str:
    base = _INVALID.sub("_", api_name).strip("_")[:58] or "api"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    taken.add(name)
    return name


def _match(call: str, calls: Mapping[str, str], opened: Sequence[tuple[str, str]]) -> str | None:
    loose = _LOOSE.sub("", call)
    if loose in calls:
        return calls[loose]
    # The answer extends a catalog call with more arguments: the longest catalog call it starts with.
    for prefix, name in opened:
        if loose.startswith(prefix):
            return name
    return None


@cache
def load(root: Path | None = None) -> ApiBench:
    """The catalog (1,066 functions) and its instructions (1,776 that match a catalog API)."""
    root = root or data_dir()
    functions: list[FunctionDef] = []
    calls: dict[str, str] = {}
    taken: set[str] = set()
    for api_file, _, _ in HUBS:
        for api in _lines(root / api_file):
            call = _LOOSE.sub("", str(api["api_call"]))
            if call in calls:
                continue
            name = _name(str(api.get("api_name") or "api"), taken)
            calls[call] = name
            raw = {"name": name, "description": _description(api), "parameters": _parameters(api.get("api_arguments"))}
            functions.append(parse_function(raw, where=f"{api_file}: {name}"))
    opened = sorted(((c[:-1].rstrip(","), n) for c, n in calls.items() if c.endswith(")")), key=lambda p: -len(p[0]))
    questions: list[BfclQuestion] = []
    unmatched = 0
    for _, eval_file, hub in HUBS:
        for i, record in enumerate(_lines(root / eval_file)):
            found = _INSTRUCTION.search(str(record.get("code", "")))
            expected = _match(str(record.get("api_call", "")), calls, opened)
            if found is None or expected is None or not found.group(1):
                unmatched += 1
                continue
            message = {"role": "user", "content": found.group(1)}
            questions.append(BfclQuestion(f"{hub}_{i}", hub, (message,), (expected,)))
    return ApiBench(functions, questions, unmatched)
