"""A cheaper `__init__` for frozen, slotted dataclasses: the run record's events, the syntax
tree's nodes (`openprose.nodes`), and the requests and answers every model call makes
(`providers.base`, `net.connection.Response`).

The interpreter builds an event for everything a run does, the parser several nodes a line,
and each model call a request, its message, an HTTP answer, a usage and a response, so their
construction is on hot paths. A frozen dataclass's generated `__init__` sets each field with
`object.__setattr__(self, name, value)` (a global lookup, an attribute lookup and a lookup of
the name per field); this one calls each slot's member descriptor directly, bound once when
the class is made: about half the time per instance, the same instances (still frozen: only
`__init__` writes through the descriptors). It is compiled when the class is first built (a
run builds a handful of the event classes; compiling all cost ~8 ms of every start-up).
"""

from __future__ import annotations

from dataclasses import MISSING, InitVar, fields
from typing import Any


class _Factory:
    """A default factory's field not given (shown as the dataclass shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_NOTHING = _Factory()


def install_slots_init(cls: type[Any], *, after: int = 0) -> None:
    """Replace the frozen, slotted dataclass `cls`'s `__init__` with one setting its slots
    directly: the same parameters (positional, then keyword-only), defaults, default
    factories and `__post_init__` call. It is compiled at the class's first construction,
    or once `after` instances were built by the generated `__init__`: compiling costs as
    much as ~100-250 constructions save (~0.5-1M instructions a class), which a class built
    a few times a run (a model call's request) would not pay back, and a fan-out's
    thousands do. A class it cannot build faithfully is refused here (`TypeError`)."""
    check_buildable(cls)
    generated = cls.__init__
    left = after

    def first_init(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal left
        if left:
            left -= 1
            generated(self, *args, **kwargs)
            return
        if cls.__init__ is first_init:
            cls.__init__ = _compiled(cls, generated)
        cls.__init__(self, *args, **kwargs)

    first_init.__qualname__ = generated.__qualname__
    first_init.__wrapped__ = generated  # type: ignore[attr-defined]  # inspect.signature
    cls.__init__ = first_init


def check_buildable(cls: type[Any]) -> None:
    """Refuse (`TypeError`) a class whose instances a function setting its slots could not
    build as its `__init__` does."""
    # frozen: by dataclasses, or by a `__setattr__` of its own (`record.frozen`), which the
    # descriptors this `__init__` writes through bypass as `object.__setattr__` would
    frozen = cls.__dataclass_params__.frozen or "__setattr__" in cls.__dict__
    if "__slots__" not in cls.__dict__ or not frozen:
        raise TypeError(f"{cls.__name__}: only a frozen, slotted dataclass")
    items = fields(cls)
    if len(items) < len(cls.__dataclass_fields__):  # class or init-only variables
        for pseudo in cls.__dataclass_fields__.values():
            kind = pseudo.type
            if isinstance(kind, InitVar) or (isinstance(kind, str) and "InitVar" in kind):
                raise TypeError(
                    f"{cls.__name__}.{pseudo.name}: init-only variables are not supported"
                )
    for item in items:
        if not item.name.isidentifier() or not item.init:
            raise TypeError(f"{cls.__name__}.{item.name}: only fields set by __init__")


def parameters(cls: type[Any], bound: dict[str, Any]) -> tuple[list[str], list[str]]:
    """`cls.__init__`'s parameters as source text (positional, then `*` and the keyword-only
    ones) and, field by field, the expression of the value it sets; the defaults and default
    factories they name (`_defaultN`, `_factoryN`) are added to `bound`, the namespace the
    function is made in."""
    positional: list[str] = []
    keyword: list[str] = []
    values: list[str] = []
    for index, item in enumerate(fields(cls)):
        name = item.name
        value = name
        if item.default is not MISSING:
            bound[f"_default{index}"] = item.default
            param = f"{name}=_default{index}"
        elif item.default_factory is not MISSING:
            bound["_NOTHING"] = _NOTHING
            bound[f"_factory{index}"] = item.default_factory
            param = f"{name}=_NOTHING"
            value = f"_factory{index}() if {name} is _NOTHING else {name}"
        else:
            param = name
        (keyword if item.kw_only else positional).append(param)
        values.append(value)
    return [*positional, *(["*", *keyword] if keyword else [])], values


def made_in(source: list[str], bound: dict[str, Any]) -> Any:
    """The function `make(**bound)` defined by `source` (its lines) returns."""
    namespace: dict[str, Any] = {}
    exec("\n".join(source), namespace)  # noqa: S102 - field names of our own classes only
    return namespace["make"](**bound)


def _compiled(cls: type[Any], generated: Any) -> Any:
    bound: dict[str, Any] = {}
    params, values = parameters(cls, bound)
    body: list[str] = []
    for index, (item, value) in enumerate(zip(fields(cls), values, strict=True)):
        bound[f"_set{index}"] = cls.__dict__[item.name].__set__
        body.append(f"        _set{index}(self, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("        self.__post_init__()")
    source = [
        f"def make({', '.join(bound)}):",
        f"    def __init__({', '.join(['self', *params])}):",
        *(body or ["        pass"]),
        "    return __init__",
    ]
    init = made_in(source, bound)
    init.__qualname__ = generated.__qualname__
    init.__module__ = generated.__module__
    init.__annotations__ = dict(generated.__annotations__)
    init.__doc__ = generated.__doc__
    return init
