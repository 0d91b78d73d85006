"""Content hashes: one canonical form per JSON value, whatever the key order; non-finite numbers refused."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from router.catalog.functions import canonical_json, parse_document, parse_function
from router.common.errors import CatalogInvalid

text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=12)
finite_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e-7, 1e16, 1e300, -0.0, 0.1, 100.0, 2.5e-5])
    | text
)
documents = st.recursive(
    finite_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4)
)


def reordered(value: Any) -> Any:
    """The same JSON value with every object's keys in reverse order."""
    if isinstance(value, dict):
        return {k: reordered(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reordered(v) for v in value]
    return value


@settings(max_examples=400, deadline=None)
@given(documents)
def test_the_canonical_form_is_json_of_the_same_value_whatever_the_key_order(value: Any) -> None:
    encoded = canonical_json(value)
    assert encoded == canonical_json(reordered(value))
    assert json.loads(encoded) == value


@settings(max_examples=200, deadline=None)
@given(documents, documents)
def test_different_values_have_different_forms(first: Any, second: Any) -> None:
    if json.dumps(first, sort_keys=True) != json.dumps(second, sort_keys=True):
        assert canonical_json(first) != canonical_json(second)


def test_integers_beyond_64_bits_and_unicode_keep_their_value() -> None:
    value = {"big": 2**64, "neg": -(2**63) - 1, "é": "caf\u00e9 \u2028 /", "Z": None}
    assert json.loads(canonical_json(value)) == value
    assert canonical_json({"a": 1, "b": 2}) == b'{"a":1,"b":2}'


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
