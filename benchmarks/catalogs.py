"""Large realistic catalogs (1k or 10k functions) grown from BFCL's function texts.

Real catalogs at that size are many services exposing near-duplicates of the same few thousand
operations under their own names and wording. So the catalog cycles through BFCL's functions
(deduplicated by name, in a seeded order): variant 0 of a base function is the function itself;
variant k > 0 rewords it systematically, never with random strings:

- **name**: namespaced and renamed from templates such as ``weather.get_current_weather_v3``,
  ``acme.get_current_weather``, ``globex_eu.fetch_current_weather`` (a domain taken from
  keywords, a provider, a region, a version, and verbs of the name swapped for synonyms);
- **description**: words swapped through a synonym table, then wrapped in a sentence template
  (``"Use this to ..."``, ``"... Backed by the Acme API."``, ``"... Only covers Europe."``);
- **parameter descriptions**: the same synonym substitution.

Everything derives from ``seed``, so a given ``(n, seed)`` always yields the same catalog.
Every name is unique and matches the router's name pattern.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchmarks.bfcl import BfclFunction, dedupe_by_name, load_functions
from router.catalog.functions import NAME_PATTERN, FunctionDef, parse_function

DOMAINS: dict[str, tuple[str, ...]] = {
    "weather": ("weather", "forecast", "temperature", "climate", "rain"),
    "finance": ("stock", "stocks", "investment", "loan", "tax", "interest", "bank", "currency", "price"),
    "travel": ("flight", "flights", "hotel", "travel", "trip", "booking", "airport"),
    "files": ("file", "files", "directory", "directories", "folder"),
    "messaging": ("message", "messages", "email", "tweet", "post", "chat"),
    "vehicle": ("vehicle", "car", "engine", "doors", "fuel", "tire"),
    "sports": ("team", "player", "league", "match", "score", "tournament"),
    "media": ("song", "music", "movie", "image", "video", "artist", "book"),
    "health": ("health", "patient", "calorie", "calories", "medical", "fitness", "diet"),
    "geo": ("location", "city", "country", "distance", "map", "population"),
    "math": ("calculate", "number", "numbers", "equation", "integral", "derivative", "matrix", "probability"),
    "dev": ("java", "javascript", "class", "object", "database", "server", "api", "array", "string"),
}
PROVIDERS = ("acme", "contoso", "globex", "initech", "umbrella", "hooli", "vandelay", "stark", "tyrell", "wayne")
REGIONS: dict[str, str] = {
    "us": "the United States",
    "eu": "Europe",
    "uk": "the United Kingdom",
    "apac": "Asia-Pacific",
    "latam": "Latin America",
    "ca": "Canada",
    "jp": "Japan",
    "au": "Australia",
}
# Alternatives for words of descriptions; inflected forms are listed separately.
SYNONYMS: dict[str, tuple[str, ...]] = {
    "based on": ("according to", "depending on"),
    "retrieve": ("fetch", "obtain", "look up"),
    "retrieves": ("fetches", "obtains", "looks up"),
    "calculate": ("compute", "work out", "determine"),
    "calculates": ("computes", "works out", "determines"),
    "find": ("locate", "look up", "search for"),
    "finds": ("locates", "looks up", "searches for"),
    "get": ("fetch", "obtain", "retrieve"),
    "gets": ("fetches", "obtains", "retrieves"),
    "create": ("make", "set up", "generate"),
    "creates": ("makes", "sets up", "generates"),
    "generate": ("produce", "create"),
    "generates": ("produces", "creates"),
    "delete": ("remove", "erase"),
    "deletes": ("removes", "erases"),
    "update": ("modify", "change", "edit"),
    "updates": ("modifies", "changes", "edits"),
    "returns": ("gives back", "yields", "outputs"),
    "provides": ("offers", "supplies", "gives"),
    "allows": ("lets", "enables"),
    "specified": ("given", "requested", "chosen"),
    "specific": ("particular", "given", "single"),
    "particular": ("specific", "given"),
    "provided": ("supplied", "given"),
    "information": ("details", "data"),
    "details": ("information", "particulars"),
    "user": ("customer", "caller", "person"),
    "users": ("customers", "callers", "people"),
    "current": ("latest", "present"),
    "various": ("several", "assorted"),
    "certain": ("some", "particular"),
    "using": ("with", "via"),
    "within": ("inside", "in"),
    "historical": ("past", "archived"),
    "detailed": ("in-depth", "thorough"),
    "available": ("open", "offered"),
    "identifier": ("ID", "key"),
}
_SYNONYM_KEYS = sorted(SYNONYMS, key=len, reverse=True)
_SYNONYM_INDEX = {key: i for i, key in enumerate(SYNONYMS)}
_WORDS = re.compile(r"\b(" + "|".join(re.escape(k) for k in _SYNONYM_KEYS) + r")\b", re.IGNORECASE)
NAME_SYNONYMS: dict[str, tuple[str, ...]] = {
    "get": ("fetch", "read", "lookup"),
    "retrieve": ("fetch", "get"),
    "calculate": ("compute", "calc"),
    "find": ("search", "lookup"),
    "search": ("find", "query"),
    "create": ("add", "new"),
    "delete": ("remove", "drop"),
    "update": ("modify", "set"),
    "check": ("verify", "validate"),
    "send": ("post", "dispatch"),
    "info": ("details", "summary"),
    "details": ("info", "summary"),
}
ACTION_TEMPLATES = (
    "Use this to {d}.",
    "Call this when you need to {d}.",
    "Lets an agent {d}.",
    "{D}. Backed by the {Provider} API.",
    "{D} ({Provider}, {region}).",
    "{Provider} {domain} service: {d}.",
    "{D}. Only covers {region}.",
)
NEUTRAL_TEMPLATES = (
    "{D}.",
    "{D}. Backed by the {Provider} API.",
    "{D} ({Provider}, {region}).",
    "[{Provider} {domain}] {D}.",
    "{D}. Only covers {region}.",
)
NAME_TEMPLATES = (
    "{domain}.{name}_v{version}",
    "{provider}.{name}",
    "{provider}_{region}.{name}",
    "{domain}.{provider}.{name}",
    "{name}_{region}",
    "{provider}.{domain}.{name}_v{version}",
)
CHANGE_NOTES = (
    "Results are cached for five minutes.",
    "Deprecated: prefer the newer version of this endpoint.",
    "Now also accepts ISO 8601 dates.",
    "Rate limited to ten calls per second.",
    "Requires an API key with read access.",
)
# Base forms of the verbs descriptions start with; the action templates need one.
_VERB_LIST = (
    "retrieve calculate get find locate search create fetch generate update execute return perform delete "
    "provide convert predict book add check set compute estimate send analyze initiate process initialize "
    "list remove play determine compare evaluate identify schedule modify validate query register cancel "
    "start stop open close read write move display show record track sort count filter merge split"
)
_VERBS = frozenset(_VERB_LIST.split())


def _domain(function: BfclFunction) -> str:
    words = set(re.findall(r"[a-z]+", f"{function.name} {function.description}".lower().replace("_", " ")))
    return next((domain for domain, keys in DOMAINS.items() if words & set(keys)), "tools")


def _base_verb(word: str) -> str | None:
    """The imperative of a description's first word when it is a known verb (``Retrieves`` -> ``retrieve``)."""
    word = word.lower()
    for candidate in (word, word[:-1], word[:-2], word[:-3] + "y" if word.endswith("ies") else ""):
        if candidate in _VERBS:
            return candidate
    return None


def _substitute(text: str, pick: int) -> str:
    def swap(match: re.Match[str]) -> str:
        found = match.group(0)
        key = found.lower()
        alternatives = SYNONYMS[key]
        replacement = alternatives[(pick + _SYNONYM_INDEX[key]) % len(alternatives)]
        return replacement[0].upper() + replacement[1:] if found[0].isupper() else replacement

    return _WORDS.sub(swap, text)


def reword(description: str, *, rng: random.Random, provider: str, region: str, domain: str) -> str:
    """A description reworded: synonyms swapped, then wrapped in a sentence template."""
    text = _substitute(description.strip(), rng.randrange(1_000)).rstrip(". ")
    if not text:
        return f"{domain.capitalize()} operation offered by {provider.capitalize()} in {REGIONS[region]}."
    first, _, rest = text.partition(" ")
    verb = _base_verb(first)
    templates = ACTION_TEMPLATES if verb is not None else NEUTRAL_TEMPLATES
    lowered = f"{verb} {rest}".strip() if verb is not None else text
    return rng.choice(templates).format(
        d=lowered, D=text, Provider=provider.capitalize(), region=REGIONS[region], domain=domain
    )


def _reword_parameters(schema: Any, pick: int) -> Any:
    """The schema with every property's description reworded through the synonym table."""
    if not isinstance(schema, Mapping):
        return schema
    copied = dict(schema)
    if isinstance(copied.get("description"), str):
        copied["description"] = _substitute(copied["description"], pick)
    if isinstance(copied.get("properties"), Mapping):
        copied["properties"] = {k: _reword_parameters(v, pick) for k, v in copied["properties"].items()}
    if isinstance(copied.get("items"), Mapping):
        copied["items"] = _reword_parameters(copied["items"], pick)
    return copied


def _rename(name: str, rng: random.Random) -> str:
    tokens = re.split(r"([._])", name)
    return "".join(rng.choice(NAME_SYNONYMS[t]) if t in NAME_SYNONYMS else t for t in tokens)


def _fit(name: str) -> str:
    if len(name) <= 64:
        return name
    return f"{name[:55]}_{hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:8]}"


def _unique(name: str, used: set[str]) -> str:
    candidate, suffix = _fit(name), 2
    while candidate in used:
        candidate = _fit(f"{name}_{suffix}")
        suffix += 1
    used.add(candidate)
    return candidate


def _variant(base: BfclFunction, k: int, *, seed: int, domain: str, used: set[str]) -> dict[str, Any]:
    if k == 0:
        return {
            "name": _unique(base.name, used),
            "description": base.description,
            "parameters": dict(base.parameters),
        }
    rng = random.Random(f"{seed}:{base.name}:{k}")
    provider, region = rng.choice(PROVIDERS), rng.choice(sorted(REGIONS))
    stem = _rename(base.name, rng) if rng.random() < 0.5 else base.name
    template = NAME_TEMPLATES[(k - 1) % len(NAME_TEMPLATES)]
    name = template.format(domain=domain, provider=provider, region=region, name=stem, version=k + 1)
    pick = rng.randrange(1_000)
    return {
        "name": _unique(name, used),
        "description": reword(base.description, rng=rng, provider=provider, region=region, domain=domain),
        "parameters": _reword_parameters(base.parameters, pick),
    }


def build_definitions(n: int, *, seed: int = 0, bases: Sequence[BfclFunction] | None = None) -> list[dict[str, Any]]:
    """``n`` function definitions in the bare shape, deterministic for a given ``seed``.

    Args:
        n: how many functions.
        seed: changes the order of base functions and every rewording choice.
        bases: the functions to grow from; BFCL's, deduplicated by name, when None.
    """
    pool = list(bases) if bases is not None else dedupe_by_name(load_functions())
    if not pool:
        raise ValueError("no base functions to build a catalog from")
    order = list(range(len(pool)))
    random.Random(seed).shuffle(order)
    domains = [_domain(function) for function in pool]
    used: set[str] = set()
    definitions = []
    for i in range(n):
        index = order[i % len(pool)]
        definitions.append(_variant(pool[index], i // len(pool), seed=seed, domain=domains[index], used=used))
    return definitions


def build_catalog(n: int, *, seed: int = 0, bases: Sequence[BfclFunction] | None = None) -> list[FunctionDef]:
    """``n`` validated functions (see ``build_definitions``)."""
    definitions = build_definitions(n, seed=seed, bases=bases)
    functions = [parse_function(d, where=f"bench catalog[{i}]") for i, d in enumerate(definitions)]
    if any(not NAME_PATTERN.match(f.name) for f in functions) or len({f.name for f in functions}) != n:
        raise RuntimeError("catalog names must be unique and valid")
    return functions


def change_one(
    functions: Sequence[FunctionDef], *, index: int | None = None, seed: int = 0
) -> tuple[list[FunctionDef], FunctionDef]:
    """The catalog with one function's description edited (as a provider would), and that function.

    Args:
        functions: the catalog.
        index: which function to change; the middle one when None.
        seed: picks the edit.
    """
    if not functions:
        raise ValueError("cannot change a function of an empty catalog")
    position = len(functions) // 2 if index is None else index
    old = functions[position]
    note = CHANGE_NOTES[random.Random(f"{seed}:{old.name}").randrange(len(CHANGE_NOTES))]
    description = f"{old.description.rstrip()} {note}".strip()
    definition = dict(old.definition)
    if old.shape == "openai":
        definition["function"] = {**definition["function"], "description": description}
    else:
        definition["description"] = description
    changed = parse_function(definition, where=f"changed {old.name}")
    updated = list(functions)
    updated[position] = changed
    return updated, changed
