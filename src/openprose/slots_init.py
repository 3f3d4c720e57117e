"""A cheaper `__init__` for frozen, slotted, keyword-only dataclasses: the run record's
events and the syntax tree's nodes (`openprose.nodes`).

The interpreter builds an event for everything a run does, and the parser several nodes a
line, so their construction is on hot paths. A frozen dataclass's generated `__init__` sets each field with
`object.__setattr__(self, name, value)` (a global lookup, an attribute lookup and a lookup of
the name per field); this one calls each slot's member descriptor directly, bound once when
the class is made: about half the time per event, the same instances (still frozen: only
`__init__` writes through the descriptors). It is compiled when the class is first built (a
run builds a handful of the event classes; compiling all cost ~8 ms of every start-up).
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import Any


def install_slots_init(cls: type[Any]) -> None:
    """Replace the dataclass `cls`'s `__init__` (frozen, `slots=True`, `kw_only=True`, no
    default factories, no `__post_init__`) with one setting its slots directly, compiled at
    its first call; a class it cannot build faithfully is refused here (`TypeError`)."""
    check_buildable(cls)
    generated = cls.__init__

    def first_init(self: Any, *args: Any, **kwargs: Any) -> None:
        if cls.__init__ is first_init:
            cls.__init__ = _compiled(cls, generated)
        cls.__init__(self, *args, **kwargs)

    first_init.__qualname__ = generated.__qualname__
    first_init.__wrapped__ = generated  # type: ignore[attr-defined]  # inspect.signature
    cls.__init__ = first_init


def check_buildable(cls: type[Any]) -> None:
    """Refuse (`TypeError`) a class whose instances a function setting its slots from
    keywords could not build as its `__init__` does."""
    # frozen: by dataclasses, or by a `__setattr__` of its own (`record.frozen`), which the
    # descriptors this `__init__` writes through bypass as `object.__setattr__` would
    frozen = cls.__dataclass_params__.frozen or "__setattr__" in cls.__dict__
    if "__slots__" not in cls.__dict__ or not frozen:
        raise TypeError(f"{cls.__name__}: only a frozen, slotted dataclass")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"{cls.__name__}: a __post_init__ would not be called")
    for item in fields(cls):
        if not item.name.isidentifier() or not item.init or not item.kw_only:
            raise TypeError(f"{cls.__name__}.{item.name}: only keyword-only fields set by __init__")
        if item.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{item.name}: default factories are not supported")


def keyword_params(cls: type[Any], bound: dict[str, Any]) -> list[str]:
    """The keyword-only parameters of `cls`'s `__init__` as source text, in field order, each
    default a name (`_defaultN`) added to `bound`, the namespace the function is made in."""
    params: list[str] = []
    for index, item in enumerate(fields(cls)):
        if item.default is MISSING:
            params.append(item.name)
        else:
            bound[f"_default{index}"] = item.default
            params.append(f"{item.name}=_default{index}")
    return params


def made_in(source: list[str], bound: dict[str, Any]) -> Any:
    """The function `make(**bound)` defined by `source` (its lines) returns."""
    namespace: dict[str, Any] = {}
    exec("\n".join(source), namespace)  # noqa: S102 - field names of our own classes only
    return namespace["make"](**bound)


def _compiled(cls: type[Any], generated: Any) -> Any:
    bound: dict[str, Any] = {}
    body: list[str] = []
    for index, item in enumerate(fields(cls)):
        bound[f"_set{index}"] = cls.__dict__[item.name].__set__
        body.append(f"        _set{index}(self, {item.name})")
    params = keyword_params(cls, bound)
    source = [
        f"def make({', '.join(bound)}):",
        f"    def __init__(self{', *, ' if params else ''}{', '.join(params)}):",
        *(body or ["        pass"]),
        "    return __init__",
    ]
    init = made_in(source, bound)
    init.__qualname__ = generated.__qualname__
    init.__module__ = generated.__module__
    init.__annotations__ = dict(generated.__annotations__)
    init.__doc__ = generated.__doc__
    return init
