"""What text represents a function when it is embedded.

Like Semantic Kernel's ``EmbeddingValueProvider``, the builder is a plain function from a
definition to a string; the named ones below can be chosen in settings, and the name is
recorded with every vector so that vectors of two templates never mix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from router.catalog.functions import FunctionDef
from router.retrieval.sparse import split_identifier

TextBuilder = Callable[[FunctionDef], str]

# all-MiniLM-L6-v2 reads 256 word pieces; the estimate below runs ~7% under the real count
# on BFCL's functions, so this budget keeps the whole text inside the window.
TOKEN_BUDGET = 220
DESCRIPTION_BUDGET = 150
_PIECES = re.compile(r"\w+|[^\w\s]")
# Parameters past these are left out of a function's facets (schemas with hundreds of properties exist).
MAX_FACETS = 24
_FACET_CHARS = 300
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


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
    return f"{head.rstrip('.')}. Parameters: {params}" if params else head


def readable(identifier: str) -> str:
    """An identifier as words: ``get_current_weather`` and ``getCurrentWeather`` give ``get current weather``."""
    return " ".join(word if word.isupper() and len(word) > 1 else word.lower() for word in split_identifier(identifier))


def estimate_tokens(text: str) -> int:
    """Roughly how many word pieces the model sees (words and punctuation marks)."""
    return len(_PIECES.findall(text))


def _inputs(parameters: Mapping[str, Any], budget: int) -> list[str]:
    entries: list[str] = []
    properties = parameters.get("properties", {})
    for name in properties:
        words = readable(str(name))
        budget -= estimate_tokens(words) + 1
        if budget < 0:
            break
        entries.append(words)
    return entries


def readable_schema(function: FunctionDef) -> str:
    """``"readable name. description\nInputs: a, b"``, fitted to the model's window.

    Names are split into words (``math.triangle_area`` reads ``math triangle area``), which the
    model understands better than identifiers, and the parameters say what the function needs,
    which requests often name. Parameter *descriptions* stay out: on richly documented catalogs
    they drown the function's purpose in a 384-number average (the project's example catalogs
    measure it), while BFCL gains nothing from them once the sparse vector, which does read
    them, is fused in. The description is clipped first, then names are listed while they fit.
    """
    name = readable(function.name) or function.name
    text = function.description.strip()
    pieces = list(_PIECES.finditer(text))
    description = text if len(pieces) <= DESCRIPTION_BUDGET else text[: pieces[DESCRIPTION_BUDGET - 1].end()]
    head = f"{name}. {description}" if description else name
    inputs = _inputs(function.parameters, TOKEN_BUDGET - estimate_tokens(head) - 2)
    return f"{head}\nInputs: {', '.join(inputs)}" if inputs else head


def words(identifier: str) -> list[str]:
    """The lower-cased words of an identifier: ``getHTTPResponse_v2`` gives ``get http response v 2``."""
    return [w.lower() for w in _WORDS.findall(identifier)]


def _schema_text(name: str, schema: Any) -> str:
    label = " ".join(words(name)) or name
    if not isinstance(schema, Mapping):
        return label
    parts = [schema.get("description")] if isinstance(schema.get("description"), str) else []
    items = schema.get("items")  # a schema, or a list of them (tuple form), or true
    choices = schema.get("enum") or (items.get("enum") if isinstance(items, Mapping) else None)
    if isinstance(choices, list) and choices:
        parts.append(", ".join(str(c) for c in choices[:12]))
    text = f"{label}: {'; '.join(p for p in parts if p)}" if parts else label
    return text[:_FACET_CHARS]


def parameter_facets(function: FunctionDef) -> list[str]:
    """What of a function's parameters a memory can matter to, one text each (embedded when synced).

    A preference rarely shares words with the request it matters for, but it does with the
    routed function's parameters (``router.sessions.recall``): ``find_restaurants`` gives
    ``"dietary restrictions: vegetarian, vegan, gluten-free"``. The function's own vector stands
    for its purpose beside them.
    """
    properties = function.parameters.get("properties")
    params = [_schema_text(k, v) for k, v in properties.items()] if isinstance(properties, Mapping) else []
    return params[: MAX_FACETS - 1]


TEMPLATES: dict[str, TextBuilder] = {
    "name_description": name_description,
    "name_description_parameters": name_description_parameters,
    "readable_schema": readable_schema,
}
DEFAULT_TEMPLATE = "readable_schema"


def template(name: str) -> TextBuilder:
    """The builder registered under ``name``."""
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ValueError(f"unknown function text template {name!r}; choose one of {sorted(TEMPLATES)}") from None
