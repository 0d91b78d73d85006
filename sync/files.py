"""A catalog directory's files: one per namespace, ``<namespace>.json|.yaml|.yml``, read and validated.

A file that cannot be read, parsed or validated is an error of its own namespace, never an
exception: one bad file changes nothing in the others.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import yaml

from router.catalog.functions import FunctionDef, parse_document, validate_namespace
from router.common.documents import yaml_problem
from router.common.errors import CatalogInvalid

SUFFIXES = (".json", ".yaml", ".yml")
# Aliases (a shared parameter schema) may repeat a YAML file's objects and lists this many times over,
# counted past a hundred thousand: a few lines of aliases nested in aliases expand without end, while
# 10,000 functions sharing one schema of fifty objects repeat it fifty times.
REPEATS = 100


@dataclass(frozen=True)
class CatalogFile:
    """One namespace as read from the directory.

    Exactly one of ``functions`` and ``error`` is set. ``functions`` is empty when the
    file is empty or lists no function: a state that never wipes a namespace by itself.
    """

    namespace: str
    path: Path
    fingerprint: str
    functions: list[FunctionDef] = field(default_factory=list)
    error: str | None = None
    pinned: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether the file parsed but holds no function."""
        return self.error is None and not self.functions


def _load(path: Path, *, seen: str | None = None) -> tuple[str, object]:
    data = path.read_bytes()
    fingerprint = hashlib.sha256(data).hexdigest()
    if fingerprint == seen:
        return fingerprint, None
    if not data.strip():
        return fingerprint, []
    if path.suffix == ".json":
        # From the bytes: a decoded copy of a 60 MB file would be 60 MB more at the pass's peak.
        # orjson refuses NaN and infinities, as a catalog PUT does (RFC 8259). A byte order mark,
        # as some Windows editors write, is no content: RFC 8259 lets a reader ignore it.
        return fingerprint, orjson.loads(data.removeprefix(codecs.BOM_UTF8))
    loaded = yaml.safe_load(data.decode("utf-8"))
    _json_like(loaded, str(path))
    return fingerprint, [] if loaded is None else loaded


def _json_like(document: object, source: str) -> None:
    """Refuse what YAML reads but JSON cannot hold: a key that is no string ("on:" is true), a date, bytes, a set,
    a value that holds itself through an alias, or aliases that repeat the document more than ``REPEATS`` times."""
    stack: list[tuple[object, str, frozenset[int]]] = [(document, "", frozenset())]
    visits, written = 0, set()
    while stack:
        value, where, holders = stack.pop()
        if isinstance(value, dict | list):
            if id(value) in holders:
                raise CatalogInvalid(f"{source}: {where or 'the document'} holds itself (a YAML alias)", field=where)
            holders = holders | {id(value)}
            visits += 1
            written.add(id(value))
            if visits > REPEATS * max(len(written), 1_000):  # "billion laughs": a few aliases that expand without end
                raise CatalogInvalid(f"{source}: its aliases repeat it more than {REPEATS} times over", field=where)
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    place = f"{where}: the key {key!r}" if where else f"the key {key!r}"
                    raise CatalogInvalid(f"{source}: {place} is no text (YAML reads it as such); quote it", field=where)
                stack.append((item, f"{where}.{key}" if where else key, holders))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]", holders) for i, item in enumerate(value))
        elif not isinstance(value, str | int | float | None):
            kind = type(value).__name__
            raise CatalogInvalid(
                f"{source}: {where}: YAML reads it as a {kind}, which JSON cannot hold; quote it", field=where
            )


def read_file(path: Path, *, seen: str | None = None) -> CatalogFile:
    """Read and validate one catalog file; errors are returned, never raised.

    A file whose bytes have the fingerprint ``seen`` is not parsed: it comes back with that
    fingerprint and no functions (what was applied from it still stands).
    """
    namespace = path.stem
    try:
        validate_namespace(namespace, source=str(path))
        fingerprint, document = _load(path, seen=seen)
    except yaml.YAMLError as exc:
        return CatalogFile(namespace, path, "", error=f"{path}: cannot be parsed: {yaml_problem(exc)}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, CatalogInvalid) as exc:
        detail = exc.detail if isinstance(exc, CatalogInvalid) else f"{path}: cannot be parsed: {exc}"
        return CatalogFile(namespace, path, "", error=detail)
    except RecursionError:  # YAML's reader recurses: some hundred levels of nesting is no catalog
        detail = f"{path}: cannot be parsed: nested too deeply"
        return CatalogFile(namespace, path, "", error=detail)
    if fingerprint == seen:
        return CatalogFile(namespace, path, fingerprint)
    try:
        parsed = parse_document(document, source=str(path), finite=path.suffix == ".json")
    except CatalogInvalid as exc:
        return CatalogFile(namespace, path, fingerprint, error=exc.detail)
    return CatalogFile(namespace, path, fingerprint, functions=parsed.functions, pinned=parsed.pinned)


def scan(directory: Path, *, seen: Mapping[str, str] | None = None) -> dict[str, CatalogFile]:
    """Read every catalog file of ``directory``, by namespace.

    Two files for one namespace (``a.json`` and ``a.yaml``) are both rejected. Files whose
    fingerprint is the one ``seen`` has for their namespace are not parsed again.
    """
    found: dict[str, CatalogFile] = {}
    duplicates: dict[str, list[Path]] = {}
    for path in sorted(directory.iterdir()):
        if path.suffix not in SUFFIXES or not path.is_file() or path.name.startswith("."):
            continue
        loaded = read_file(path, seen=(seen or {}).get(path.stem))
        if loaded.namespace in found:
            duplicates.setdefault(loaded.namespace, [found[loaded.namespace].path]).append(path)
            continue
        found[loaded.namespace] = loaded
    for namespace, paths in duplicates.items():
        names = ", ".join(str(p) for p in paths)
        found[namespace] = CatalogFile(
            namespace, paths[0], "", error=f"{names}: several files define namespace {namespace!r}; keep one"
        )
    return found


def source_label(directory: Path) -> str:
    """How catalogs from ``directory`` are labelled in the store."""
    return f"dir:{directory.resolve()}"
