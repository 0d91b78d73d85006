"""Function definitions: the three accepted shapes, validation and content hashes.

A definition arrives as an OpenAI tool (``{"type": "function", "function": {...}}``),
bare (``{"name", "description", "parameters"}``, which is also the Responses API's flat
``{"type": "function", "name", ...}``, and Anthropic's ``{"name", "description", "input_schema"}``)
or MCP (``{"name", "description", "inputSchema"}``).
It is validated, normalised for embedding, and kept verbatim so that routing hands back
exactly what was registered.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import orjson

from router.common.errors import CatalogInvalid

NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
Shape = Literal["openai", "bare", "mcp"]
_POINT_NAMESPACE = uuid.UUID("6f1d8e52-3c1b-4b6e-9a57-1f0d4c2b7a10")


@dataclass(frozen=True)
class FunctionDef:
    """One validated function of a catalog.

    Attributes:
        name: the function's name, unique within its namespace.
        description: what it does ("" when the definition has none).
        parameters: its JSON-schema object.
        shape: which of the three shapes it arrived in.
        definition: the definition exactly as registered.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    shape: Shape
    definition: Mapping[str, Any] = field(repr=False)

    @cached_property
    def content_hash(self) -> str:
        """A stable hash of the verbatim definition: equal hashes need no re-embedding."""
        return hashlib.sha256(canonical_json(self.definition)).hexdigest()

    def openai_tool(self) -> dict[str, Any]:
        """The definition as an OpenAI tool object (verbatim when it arrived as one)."""
        if self.shape == "openai":
            return dict(self.definition)
        function: dict[str, Any] = {"name": self.name}
        if "description" in self.definition:
            function["description"] = self.description
        function["parameters"] = dict(self.parameters)
        if "strict" in self.definition:  # the Responses API's flat tool says it at the top
            function["strict"] = self.definition["strict"]
        return {"type": "function", "function": function}


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON (sorted keys, no spaces, UTF-8), the bytes content hashes are made of.

    orjson writes a definition in a third of ``json.dumps``'s time; integers beyond 64 bits, which
    it refuses, are written by ``json.dumps``.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def point_id(namespace: str, name: str) -> str:
    """The deterministic point id of a function: the same function always lands on the same point."""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{namespace}\x00{name}"))


def validate_namespace(namespace: str, *, source: str = "request") -> str:
    """Return ``namespace`` when it is a valid namespace name, else raise ``CatalogInvalid``."""
    if not isinstance(namespace, str) or not NAME_PATTERN.fullmatch(namespace):
        raise CatalogInvalid(f"{source}: namespace {namespace!r} must match {NAME_PATTERN.pattern}", field="namespace")
    if not namespace.strip("."):  # "/v1/catalogs/.." is another path to every HTTP client
        raise CatalogInvalid(f"{source}: namespace {namespace!r} must hold more than dots", field="namespace")
    return namespace


def parse_function(raw: Any, *, where: str, finite: bool = False) -> FunctionDef:
    """Validate one definition in any of the three shapes.

    Args:
        raw: the decoded JSON object.
        where: how errors name it, e.g. ``"travel.json: functions[3]"``.
        finite: ``raw`` was decoded by a parser that refuses NaN and infinities (strict JSON, as
            orjson reads it), so it is not searched for them again.

    Raises:
        CatalogInvalid: naming ``where`` and the offending field.
    """
    if not isinstance(raw, Mapping):
        raise CatalogInvalid(f"{where}: must be an object, got {type(raw).__name__}", field=where)
    kind = raw.get("type")
    if isinstance(kind, str) and kind != "function" and "name" not in raw:  # a tool list's tool_search, a hosted tool
        raise CatalogInvalid(f"{where}.type: a {kind!r} tool is not a function; leave it out", field=f"{where}.type")
    shape: Shape
    # OpenAI's Responses API writes its function tools flat: {"type": "function", "name", "parameters"}.
    if "function" in raw or (raw.get("type") == "function" and "name" not in raw):
        shape, body, prefix = "openai", raw.get("function"), f"{where}.function"
        if not isinstance(body, Mapping):
            raise CatalogInvalid(f"{prefix}: must be an object", field=prefix)
    elif "inputSchema" in raw:
        shape, body, prefix = "mcp", raw, where
    else:
        shape, body, prefix = "bare", raw, where
    name = body.get("name")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise CatalogInvalid(
            f"{prefix}.name: {name!r} must be a string matching {NAME_PATTERN.pattern}",
            field=f"{prefix}.name",
        )
    description = "" if body.get("description") is None else body["description"]
    if not isinstance(description, str):
        raise CatalogInvalid(
            f"{prefix}.description: must be a string, got {type(description).__name__}",
            field=f"{prefix}.description",
        )
    key = "inputSchema" if shape == "mcp" else "parameters"
    if shape == "bare" and key not in body and "input_schema" in body:
        key = "input_schema"  # Anthropic's custom tool: {"name", "description", "input_schema"}
    parameters = body.get(key, {"type": "object", "properties": {}})
    _check_schema(parameters, f"{prefix}.{key}")
    if not finite:
        _check_finite(raw, where)
    return FunctionDef(name, description, parameters, shape, raw)


def _check_finite(definition: Mapping[str, Any], where: str) -> None:
    # JSON (RFC 8259) has no NaN or infinity: no model API accepts a tool holding one.
    try:
        path = _non_finite(definition)
    except RecursionError:
        raise CatalogInvalid(f"{where}: nested too deeply", field=where) from None
    if path is not None:
        raise CatalogInvalid(f"{where}{path}: NaN and infinities are not JSON numbers", field=f"{where}{path}")


def _non_finite(value: Any) -> str | None:
    """Where in ``value`` a NaN or an infinity is (``""``: ``value`` itself), or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else ""
    if isinstance(value, Mapping):
        for key, item in value.items():
            inner = _non_finite(item)
            if inner is not None:
                return f".{key}{inner}"
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            inner = _non_finite(item)
            if inner is not None:
                return f"[{index}]{inner}"
    return None


def _check_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, Mapping):
        raise CatalogInvalid(f"{where}: must be a JSON-schema object, got {type(schema).__name__}", field=where)
    if schema.get("type", "object") != "object":
        raise CatalogInvalid(f"{where}.type: must be 'object', got {schema.get('type')!r}", field=f"{where}.type")
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping) or not all(isinstance(v, Mapping) for v in properties.values()):
        raise CatalogInvalid(f"{where}.properties: must map names to schema objects", field=f"{where}.properties")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise CatalogInvalid(f"{where}.required: must be a list of property names", field=f"{where}.required")


@dataclass(frozen=True)
class CatalogDocument:
    """A validated catalog: its functions and the names always returned with a route."""

    functions: list[FunctionDef]
    pinned: tuple[str, ...] = ()


def parse_document(document: Any, *, source: str, finite: bool = False) -> CatalogDocument:
    """Validate a catalog: a list of definitions or ``{"functions": [...], "pinned"?: [names]}``.

    ``finite``: as for ``parse_function``.

    Raises:
        CatalogInvalid: on the first bad definition, a duplicate name or an unknown pinned
            name; nothing is partial.
    """
    pinned: Any = []
    if isinstance(document, Mapping):
        unknown = sorted(set(document) - {"functions", "pinned"})
        if unknown:
            raise CatalogInvalid(
                f"{source}: unexpected keys {unknown}; expected 'functions' (and 'pinned')", field=source
            )
        items = document.get("functions")
        pinned = document.get("pinned", [])
        prefix = f"{source}: functions"
    else:
        items, prefix = document, f"{source}: "
    if not isinstance(items, list):
        raise CatalogInvalid(f"{source}: must be a list of functions or {{'functions': [...]}}", field=source)
    functions: list[FunctionDef] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(items):
        where = f"{prefix}[{index}]"
        function = parse_function(raw, where=where, finite=finite)
        if function.name in seen:
            raise CatalogInvalid(
                f"{where}.name: duplicate name {function.name!r} (first at index {seen[function.name]})",
                field=f"{where}.name",
            )
        seen[function.name] = index
        functions.append(function)
    if not isinstance(pinned, list):
        raise CatalogInvalid(f"{source}: pinned: must be a list of function names", field="pinned")
    for index, name in enumerate(pinned):
        if not isinstance(name, str):
            raise CatalogInvalid(
                f"{source}: pinned[{index}]: must be a function name, got {type(name).__name__}",
                field=f"pinned[{index}]",
            )
        if name not in seen:
            raise CatalogInvalid(f"{source}: pinned[{index}]: no function named {name!r}", field=f"pinned[{index}]")
    return CatalogDocument(functions, tuple(dict.fromkeys(pinned)))


def parse_catalog(document: Any, *, source: str) -> list[FunctionDef]:
    """Validate a catalog and return its functions (see ``parse_document``)."""
    return parse_document(document, source=source).functions


def function_from_payload(payload: Mapping[str, Any]) -> FunctionDef:
    """Rebuild a stored function from its point payload."""
    return parse_function(payload["definition"], where=f"stored {payload.get('name')!r}", finite=True)
