"""Catalogs of the performance benchmark, and the cache of large stores built once.

Embedding 100k functions takes tens of minutes on 2 cores, so a store of that size is built once
and its data directory kept in ``benchmarks/.cache/`` (git-ignored) with the figures of its build.
The key names everything that makes the vectors what they are: the generator's output (a digest
of the definitions, so any change of ``benchmarks/catalogs.py`` or of BFCL's data invalidates it),
the size, the model, the text template, the router's vector schema version and the engine version.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import router
from benchmarks.catalogs import build_definitions, change_one
from router.catalog.functions import FunctionDef, parse_function
from router.catalog.records import SCHEMA_VERSION

__all__ = ["CACHE", "BuildInfo", "Catalog", "StoreCache", "copy_store", "load_catalog", "product_version"]

CACHE = Path(__file__).with_name(".cache")
# Bump when how the benchmark builds its stores changes (the namespace, the way they are written).
LAYOUT = 1


@dataclass(frozen=True)
class Catalog:
    """One benchmark catalog, its one-function edit, and both as PUT bodies.

    Attributes:
        functions: the validated functions.
        changed: the same catalog with one description edited.
        body: ``{"functions": [...]}`` as JSON bytes.
        changed_body: the edited catalog as JSON bytes.
        digest: sha256 of ``body``: what the generator produced.
    """

    functions: list[FunctionDef]
    changed: list[FunctionDef]
    changed_function: FunctionDef
    body: bytes
    changed_body: bytes
    digest: str

    @property
    def size(self) -> int:
        """How many functions."""
        return len(self.functions)


def _body(functions: list[FunctionDef]) -> bytes:
    return json.dumps({"functions": [dict(f.definition) for f in functions]}, separators=(",", ":")).encode()


def load_catalog(n: int, *, seed: int) -> Catalog:
    """Build the catalog of ``n`` functions (BFCL-grown, see ``benchmarks.catalogs``) and its edit."""
    definitions = build_definitions(n, seed=seed)
    functions = [parse_function(d, where=f"bench catalog[{i}]") for i, d in enumerate(definitions)]
    changed, changed_function = change_one(functions, seed=seed)
    body = _body(functions)
    return Catalog(functions, changed, changed_function, body, _body(changed), hashlib.sha256(body).hexdigest())


@dataclass(frozen=True)
class BuildInfo:
    """How a cached store was built: its full sync through ``PUT``, beside the bare encode.

    Attributes:
        functions: how many functions were synced.
        seconds: the full sync, from the PUT sent to its answer.
        floor_rate: bare batch-encode rate of the same texts (functions/s), mean of before and after.
        floor_texts: how many texts the floor encoded (a length-stratified sample when fewer).
        built_at: when (UTC).
        load: the 1-minute load average at the start and the end of the build.
        peak_rss: the server's resident memory high-water mark during the build (bytes).
        product: the router's version that built it (see ``product_version``).
    """

    functions: int
    seconds: float
    floor_rate: float
    floor_texts: int
    built_at: str
    load: tuple[float, float]
    peak_rss: int
    product: str = "unknown"

    @property
    def rate(self) -> float:
        """Functions synced per second."""
        return self.functions / self.seconds


class StoreCache:
    """Data directories of built stores, one folder per key, with their ``BuildInfo``."""

    def __init__(self, root: Path = CACHE) -> None:
        self._root = root

    @staticmethod
    def key(catalog: Catalog, *, model: str, text: str) -> str:
        """What the stored vectors depend on, hashed."""
        engine = metadata.version("qdrant-edge-py")
        parts = f"{LAYOUT}|{catalog.digest}|{catalog.size}|{model}|{text}|{SCHEMA_VERSION}|{engine}"
        return f"store-{catalog.size}-{hashlib.sha256(parts.encode()).hexdigest()[:16]}"

    def load(self, key: str) -> tuple[Path, BuildInfo] | None:
        """The cached data directory and its build figures, or None."""
        folder = self._root / key
        try:
            raw: dict[str, Any] = json.loads((folder / "build.json").read_text())
        except (OSError, ValueError):
            return None
        data = folder / "data"
        if not data.is_dir():
            return None
        raw["load"] = tuple(raw["load"])
        return data, BuildInfo(**raw)

    def save(self, key: str, data: Path, info: BuildInfo) -> None:
        """Copy a built data directory into the cache (complete or not at all)."""
        folder = self._root / key
        scratch = self._root / f".{key}.{time.time_ns()}"
        try:
            shutil.copytree(data, scratch / "data", ignore=shutil.ignore_patterns(".lock"))
            (scratch / "build.json").write_text(json.dumps(asdict(info), indent=2))
            shutil.rmtree(folder, ignore_errors=True)
            scratch.rename(folder)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)


def product_version() -> str:
    """The version of the router code measured: ``$BENCH_PRODUCT`` when set (a snapshot), else its git commit."""
    given = os.environ.get("BENCH_PRODUCT")
    if given:
        return given
    root = Path(router.__file__).resolve().parents[1]
    try:
        git = ["git", "-C", str(root)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)  # noqa: S603
        dirty = subprocess.run([*git, "status", "--porcelain", "router", "sync"], capture_output=True, text=True)  # noqa: S603
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    changed = " + uncommitted changes in router/ or sync/" if dirty.stdout.strip() else ""
    return f"{head.stdout.strip()}{changed}"


def copy_store(source: Path, target: Path) -> None:
    """A working copy of a cached data directory (the benchmark writes to it)."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".lock"))
