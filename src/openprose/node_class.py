"""`node_class`: the syntax tree's (and the run record's events') frozen, slotted, keyword-only
dataclasses, made for less start-up.

`dataclass(frozen=True, ...)` compiles (`exec`) a `__setattr__`, `__delattr__`, `__repr__`,
`__eq__` and `__hash__` for each of the ~50 node classes, every time `prose check` starts
(check35f: most of the ~0.19 G instructions of creating them). Here the dataclass machinery
makes the fields, the slots and the `__init__` (replaced by `slots_init`'s), and the rest are
functions written once and shared, with a generated class's behaviour:

- assigning or deleting a field raises `dataclasses.FrozenInstanceError`;
- `==` compares the fields with `compare=True` of two instances of the same class (so not the
  spans), `hash` is the hash of their tuple, `repr` shows the fields with `repr=True`;
- copying and pickling restore the slots through `object.__setattr__`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass, field, fields
from operator import attrgetter
from typing import Any, ParamSpec, TypeVar, cast, dataclass_transform

from openprose.slots_init import check_buildable, install_slots_init, made_in, parameters

_C = TypeVar("_C")
_P = ParamSpec("_P")


@dataclass_transform(frozen_default=True, kw_only_default=True, field_specifiers=(field,))
def node_class(cls: type[_C]) -> type[_C]:
    """`dataclass(frozen=True, slots=True, kw_only=True)` with the shared methods."""
    made = dataclass(slots=True, kw_only=True, repr=False, eq=False)(cls)
    items = fields(made)  # type: ignore[arg-type]
    made._compared = staticmethod(  # type: ignore[attr-defined]
        _values_of(tuple(item.name for item in items if item.compare))
    )
    made._shown = tuple(item.name for item in items if item.repr)  # type: ignore[attr-defined]
    made._all = tuple(item.name for item in items)  # type: ignore[attr-defined]
    for name, method in _SHARED.items():
        setattr(made, name, method)
    install_slots_init(made)
    return made


def _values_of(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The named fields' values as a tuple (`attrgetter` of one name returns the value)."""
    if len(names) > 1:
        return attrgetter(*names)
    getters = [attrgetter(name) for name in names]
    return lambda node: tuple(get(node) for get in getters)


def _setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    compared = self._compared
    return bool(compared(self) == compared(other))


def _hash(self: Any) -> int:
    return hash(self._compared(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
    return f"{self.__class__.__qualname__}({shown})"


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, name) for name in self._all]


def _setstate(self: Any, state: list[Any]) -> None:
    for name, value in zip(self._all, state, strict=True):
        object.__setattr__(self, name, value)


def open_twin(cls: type[Any]) -> type[Any]:
    """A class with `cls`'s slots and nothing else (so the same layout): a fresh instance of
    it takes plain attribute stores, then `instance.__class__ = cls` makes it a `cls`. A hot
    node's factory builds it so: no `__init__` frame, no descriptor call per field."""
    if cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__}: only a class made directly on object")
    return type(f"_Open{cls.__name__}", (), {"__slots__": cls.__slots__})


def open_factory(cls: Callable[_P, _C]) -> Callable[_P, _C]:
    """A function taking `cls(...)`'s parameters (same names, kinds and defaults) and
    returning the instance `cls(...)` returns, built through `open_twin(cls)`: under a third
    of the instructions of a call of the class with keywords (type call, keywords packed into
    a dict and unpacked again, `__init__`'s frame, a descriptor call per field; rec30h).
    Compiled from the class's fields, so it cannot drift from them. For a frozen, slotted
    dataclass made directly on object (`node_class`, the run record's events)."""
    made = cast(type[Any], cls)
    check_buildable(made)
    bound: dict[str, Any] = {"_twin": open_twin(made), "_cls": made}
    params, values = parameters(made, bound)
    stores = [
        f"        e.{item.name} = {value}" for item, value in zip(fields(made), values, strict=True)
    ]
    after = ["        e.__post_init__()"] if hasattr(made, "__post_init__") else []
    source = [
        f"def make({', '.join(bound)}):",
        f"    def new_{made.__name__}({', '.join(params)}):",
        "        e = _twin()",
        *stores,
        "        e.__class__ = _cls",
        *after,
        "        return e",
        f"    return new_{made.__name__}",
    ]
    factory = made_in(source, bound)
    factory.__module__ = made.__module__
    factory.__doc__ = f"`{made.__name__}(...)`, built through its open twin (`open_factory`)."
    return cast(Callable[_P, _C], factory)


_SHARED: dict[str, Any] = {
    "__setattr__": _setattr,
    "__delattr__": _delattr,
    "__eq__": _eq,
    "__hash__": _hash,
    "__repr__": _repr,
    "__getstate__": _getstate,
    "__setstate__": _setstate,
}
