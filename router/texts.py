"""What text represents a function when it is embedded.

Like Semantic Kernel's ``EmbeddingValueProvider``, the builder is a plain function from a
definition to a string; the named ones below can be chosen in settings, and the name is
recorded with every vector so that vectors of two templates never mix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from router.catalog import FunctionDef

TextBuilder = Callable[[FunctionDef], str]


def name_description(function: FunctionDef) -> str:
    """``"name: description"``, the text Semantic Kernel and langgraph-bigtool embed."""
    return f"{function.name}: {function.description}" if function.description else function.name


def parameter_summary(parameters: Mapping[str, Any]) -> str:
    """``"a (what a is), b"`` from a JSON-schema object's properties."""
    parts = []
    properties = parameters.get("properties", {})
    for name, schema in properties.items():
        description = schema.get("description") if isinstance(schema, Mapping) else None
        parts.append(f"{name} ({description})" if isinstance(description, str) and description else name)
    return ", ".join(parts)


def name_description_parameters(function: FunctionDef) -> str:
    """``"name: description. Parameters: a (what a is), b"``."""
    head = name_description(function)
    params = parameter_summary(function.parameters)
    return f"{head}. Parameters: {params}" if params else head


TEMPLATES: dict[str, TextBuilder] = {
    "name_description": name_description,
    "name_description_parameters": name_description_parameters,
}
DEFAULT_TEMPLATE = "name_description"


def template(name: str) -> TextBuilder:
    """The builder registered under ``name``."""
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ValueError(f"unknown function text template {name!r}; choose one of {sorted(TEMPLATES)}") from None
