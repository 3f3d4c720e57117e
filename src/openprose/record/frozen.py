"""Frozen, slotted dataclasses made for less start-up: the event classes.

A keyword-only class (every journaled event) is made by `openprose.node_class`, as the syntax
tree's nodes are: the dataclass machinery makes only the fields, slots and `__init__`, and the
frozen `__setattr__`/`__delattr__`, `__eq__`, `__hash__`, `__repr__` and pickling are functions
written once and shared (the generated ones were most of `import openprose.record.events`'
cost: rec30c and check35f in docs/decisions.md). A class with positional fields (the two never
journaled) is a plain frozen dataclass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

from openprose.node_class import node_class

_C = TypeVar("_C")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen_dataclass(
    *, frozen: bool = True, slots: bool = True, kw_only: bool = False
) -> Callable[[type[_C]], type[_C]]:
    """`dataclass(frozen=True, slots=True, kw_only=...)`, keyword-only classes with the
    shared methods of `node_class`."""
    if not (frozen and slots):
        raise TypeError("only frozen, slotted classes")
    if not kw_only:
        return dataclass(frozen=True, slots=True)
    return node_class
