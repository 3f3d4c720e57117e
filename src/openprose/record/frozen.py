"""Frozen, slotted, keyword-only dataclasses made for less start-up: the event classes.

`dataclasses.dataclass(frozen=True, ...)` compiles (`exec`) a `__setattr__`, `__delattr__`,
`__repr__`, `__eq__` and `__hash__` for every class: most of the ~45 ms `import
openprose.record.events` cost before rec30c (docs/decisions.md, rec30c). Here the
dataclass machinery makes only the fields, slots and the `__init__` (whose signature
`slots_init` keeps and whose body it replaces), and the same behaviour comes from functions
written once and shared by every class:

- assigning or deleting a field raises `dataclasses.FrozenInstanceError`, as a frozen
  dataclass does (the instance is written only by `__init__`, through the slots' descriptors);
- `==` compares the fields of two instances of the same class; `hash` is the hash of the
  fields' tuple; `repr` is `Class(field=value, ...)`, as the generated methods do;
- copying and pickling restore the slots through their descriptors, not `__setattr__`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

from openprose.slots_init import install_slots_init

_C = TypeVar("_C")

_VALUES = "_event_values"  # class attribute: an instance -> the tuple of its fields' values


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen_dataclass(
    *, frozen: bool = True, slots: bool = True, kw_only: bool = False
) -> Callable[[type[_C]], type[_C]]:
    """`dataclass(frozen=True, slots=True, kw_only=True)` with the shared methods (see the
    module); a class with positional fields (the two never journaled) is a plain frozen
    dataclass, since only `slots_init`'s `__init__` writes past the shared `__setattr__`."""
    if not (frozen and slots):
        raise TypeError("only frozen, slotted classes")
    if not kw_only:
        return dataclass(frozen=True, slots=True)

    def make(cls: type[_C]) -> type[_C]:
        made = dataclass(slots=True, kw_only=kw_only, repr=False, eq=False)(cls)
        names = tuple(item.name for item in fields(made))  # type: ignore[arg-type]
        values = attrgetter(*names) if len(names) > 1 else _as_tuple(names)
        setattr(made, _VALUES, staticmethod(values))
        for name, method in _SHARED.items():
            setattr(made, name, method)
        install_slots_init(made)  # the generated `__init__` would assign through `__setattr__`
        return made

    return make


def _as_tuple(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of none or one field, as a tuple (`attrgetter` of one name is not one)."""
    getters = [attrgetter(name) for name in names]
    return lambda event: tuple(get(event) for get in getters)


def _setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    values = getattr(self, _VALUES)
    return bool(values(self) == values(other))


def _hash(self: Any) -> int:
    return hash(getattr(self, _VALUES)(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{item.name}={getattr(self, item.name)!r}" for item in fields(self))
    return f"{self.__class__.__qualname__}({shown})"


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, item.name) for item in fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for item, value in zip(fields(self), state, strict=True):
        object.__setattr__(self, item.name, value)


_SHARED: dict[str, Any] = {
    "__setattr__": _setattr,
    "__delattr__": _delattr,
    "__eq__": _eq,
    "__hash__": _hash,
    "__repr__": _repr,
    "__getstate__": _getstate,
    "__setstate__": _setstate,
}
