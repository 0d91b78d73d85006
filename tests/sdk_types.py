"""Shapes checked against the official SDKs' own types (``openai``, ``anthropic``), offline.

The SDKs' request types are ``TypedDict``s whose lists are typed ``Iterable`` (validated
lazily by pydantic) or ``SequenceNotStr``: ``strict_type`` rewrites them as lists, so that
``conforms`` validates everything at once. A value conforms when validating it keeps it
exactly: a key the type does not know is dropped by validation, and the value then differs.
"""

from __future__ import annotations

import collections.abc
import typing
from typing import Annotated, Any, Literal, NotRequired, Required, Union, get_args, get_origin, get_type_hints

import typing_extensions
from pydantic import TypeAdapter
from typing_extensions import TypedDict, is_typeddict

_SEQUENCES = {collections.abc.Iterable, collections.abc.Sequence, list, typing.List}  # noqa: UP006
_made: dict[Any, Any] = {}


def _bare(hint: Any) -> Any:
    """A field's type without ``Required`` / ``NotRequired`` (``__required_keys__`` says which it is)."""
    while get_origin(hint) in (Required, NotRequired, typing_extensions.Required, typing_extensions.NotRequired):
        hint = get_args(hint)[0]
    return hint


def strict_type(tp: Any) -> Any:
    """``tp`` with every iterable or sequence type made a ``list`` (TypedDicts rebuilt alike)."""
    if is_typeddict(tp):
        if tp not in _made:
            _made[tp] = tp  # a type that refers to itself keeps its original inner reference
            hints = get_type_hints(tp, include_extras=True)
            fields = {
                key: (Required if key in tp.__required_keys__ else NotRequired)[strict_type(_bare(hint))]
                for key, hint in hints.items()
            }
            rebuilt = TypedDict(tp.__name__, fields, total=False)  # type: ignore[operator]
            config = getattr(tp, "__pydantic_config__", None)
            if config is not None:
                rebuilt.__pydantic_config__ = config  # type: ignore[attr-defined]
            _made[tp] = rebuilt
        return _made[tp]
    origin, args = get_origin(tp), get_args(tp)
    if origin is Annotated:
        return Annotated[(strict_type(args[0]), *tp.__metadata__)]  # type: ignore[valid-type]
    if origin is Union:
        return Union[tuple(strict_type(a) for a in args)]  # noqa: UP007
    if origin is Literal or origin is None:
        return tp
    if origin in _SEQUENCES or getattr(origin, "__name__", "") == "SequenceNotStr":
        return list[strict_type(args[0])]  # type: ignore[misc]
    if origin in (dict, collections.abc.Mapping):
        return dict[strict_type(args[0]), strict_type(args[1])]  # type: ignore[misc]
    return tp


def conforms(tp: Any, value: Any) -> Any:
    """Validate ``value`` as the SDK type ``tp``; fail unless it is kept exactly. Returns it validated."""
    validated = TypeAdapter(strict_type(tp)).validate_python(value)
    assert validated == value, f"not a {getattr(tp, '__name__', tp)}: validation kept {validated!r}"
    return validated
