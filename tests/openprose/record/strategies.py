"""Hypothesis strategies for the run record's events: a value of any field's type hint."""

from __future__ import annotations

import types
import typing
from dataclasses import MISSING, fields
from typing import Any

from hypothesis import strategies as st

TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=8)
INT = st.integers(-(2**63), 2**63 - 1)
FLOAT = st.floats(allow_nan=False, allow_infinity=False)
JSON_VALUE = st.recursive(
    st.none() | st.booleans() | INT | FLOAT | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def value_of(hint: Any) -> st.SearchStrategy[Any]:
    """Any value of a field's type hint (`JSON` fields: any JSON value)."""
    if hint is typing.Any:
        return JSON_VALUE
    if hint is str:
        return TEXT
    if hint is bool:
        return st.booleans()
    if hint is int:
        return INT
    if hint is float:
        return FLOAT
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return st.one_of(*(value_of(a) for a in args))
    if hint is type(None):
        return st.none()
    if origin is list:
        return st.lists(value_of(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(value_of(args[0]), value_of(args[1]), max_size=3)
    raise AssertionError(f"no strategy for {hint!r}: teach the round-trip test its type")


def keywords_of(cls: type[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Keywords building an event: every field it needs, any of those with a default."""
    hints = typing.get_type_hints(cls)
    needed = {f.name: value_of(hints[f.name]) for f in fields(cls) if f.default is MISSING}
    defaulted = {f.name: value_of(hints[f.name]) for f in fields(cls) if f.default is not MISSING}
    return st.fixed_dictionaries(needed, optional=defaulted)
