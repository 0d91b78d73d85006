"""Content hashes: the fast canonical JSON writes exactly what the stored hashes were made of."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.catalog.functions import canonical_json, parse_document, parse_function
from router.common.errors import CatalogInvalid


def reference(value: Any) -> bytes:
    """How every stored hash was made: ``json.dumps`` with sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e-7, 1e16, 1e300, -0.0, 0.1, 100.0, 2.5e-5, 123456789012345678.0])
    | text
)
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4))


@settings(max_examples=600, deadline=None)
@given(documents)
def test_canonical_json_is_byte_for_byte_what_json_dumps_writes(value: Any) -> None:
    assert canonical_json(value) == reference(value)


def test_awkward_values_agree() -> None:
    for value in [
        {"b": 1, "a": [1e-7, 1e16, math.inf, -math.inf, math.nan]},
        {"z": 'caf\u00e9 \u2028 \u0000 \x1f \x7f \\ " /', "a": None},
        {"big": 2**64, "neg": -(2**63) - 1, "ok": 2**63 - 1},
        {"é": 1, "e": 2, "\U0001f600": 3, "Z": 4},
        {"description": "v1e5 is a version", "nested": {"y": [True, False, None]}},
    ]:
        assert canonical_json(value) == reference(value)


def test_the_content_hash_of_a_definition_is_unchanged() -> None:
    definition = {"name": "get_weather", "description": "Weather in a city", "parameters": {"type": "object"}}
    function = parse_function(definition, where="test")
    # The hash stored by every earlier version for this definition.
    import hashlib

    assert function.content_hash == hashlib.sha256(reference(definition)).hexdigest()


finite_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
definitions = st.recursive(
    finite_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4)
)


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused_with_where_they_are(number: float) -> None:
    definition = {"name": "f", "parameters": {"type": "object", "properties": {"x": {"enum": [1, number]}}}}

    with pytest.raises(CatalogInvalid) as raised:
        parse_function(definition, where="tools[2]")

    assert raised.value.field == "tools[2].parameters.properties.x.enum[1]"
    assert "NaN and infinities are not JSON numbers" in raised.value.detail


def test_a_definition_from_a_strict_decoder_is_not_searched_again() -> None:
    definition = {"name": "f", "parameters": {"type": "object", "default": math.nan}}

    assert parse_function(definition, where="t", finite=True).name == "f"  # the caller's word
    with pytest.raises(CatalogInvalid):
        parse_document([definition], source="t")
