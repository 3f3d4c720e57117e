"""vlp._columns.columns against attrgetter, on every kind of attribute lookup."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vlp._columns import columns


class Slots:
    __slots__ = ("a", "b")
    c = "class attribute"

    def m(self) -> str:
        return "method"

    def __init__(self, a: object, b: object) -> None:
        self.a = a
        self.b = b


class SlotsAndDict(Slots):
    __slots__ = ("__dict__",)

    @property
    def c(self) -> str:  # type: ignore[override]
        return "property"


class Plain:
    c = "hidden class attribute"

    def __init__(self, a: object, b: object) -> None:
        self.a = a
        self.b = b
        self.c = "instance attribute"


class Computed:
    def __getattr__(self, name: str) -> str:
        return f"computed {name}"


class Shadowing(Slots):
    """A class whose lookup is not the generic one: the slots must not be read straight."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        return f"shadowed {name}"


class Message(msgspec.Struct, tag=True):
    a: object
    b: object = None
    c: str = "struct default"


def _objects() -> st.SearchStrategy[Any]:
    value = st.one_of(st.integers(), st.text(max_size=3), st.none())
    return st.one_of(
        st.builds(Slots, value, value),
        st.builds(SlotsAndDict, value, value),
        st.builds(Plain, value, value),
        st.builds(Message, value, value),
        st.just(Computed()),
        st.builds(Shadowing, value, value),
    )


@given(
    st.lists(_objects(), max_size=20),
    st.lists(st.sampled_from(["a", "b", "c", "m", "__class__"]), max_size=4),
)
def test_columns_are_attrgetter_maps(objects: list[Any], names: list[str]) -> None:
    try:
        expected = [list(map(attrgetter(name), objects)) for name in names]
    except AttributeError:
        with pytest.raises(AttributeError):
            columns(objects, tuple(names))
    else:
        assert columns(objects, tuple(names)) == expected


def test_the_values_are_the_objects_themselves() -> None:
    value = object()
    got = columns([Slots(value, 1), Message(value)], ("a",))
    assert got[0][0] is value and got[0][1] is value


def test_an_instance_dict_does_not_hide_a_slot() -> None:
    item = SlotsAndDict(1, 2)
    item.__dict__["a"] = "dict"
    assert columns([item], ("a", "c")) == [[1], ["property"]]


def test_a_class_attribute_is_the_object_itself() -> None:
    value = object()

    class Holder:
        __slots__ = ()
        c = value

    assert columns([Holder(), Holder()], ("c",)) == [[value, value]]
    assert columns([Holder()], ("c",))[0][0] is value


def test_a_class_changed_while_read_is_read_anew() -> None:
    class Holder:
        __slots__ = ()
        c = "before"

    class Changing:
        def __getattr__(self, name: str) -> str:
            Holder.c = "after"
            return name

    objects = [Holder(), Changing(), Holder()]
    assert columns(objects, ("c",)) == [["before", "c", "after"]]


def test_many_types_and_many_names() -> None:
    kinds = [
        type(f"Kind{number}", (Slots,), {"__slots__": (), "c": number}) for number in range(20)
    ]
    objects = [kind(number, str(number)) for number, kind in enumerate(kinds * 2)]
    names = ("a", "b", "c", "__class__") * 3
    expected = [list(map(attrgetter(name), objects)) for name in names]
    assert columns(objects, names) == expected


def test_an_empty_slot_raises_attribute_error() -> None:
    empty = Slots.__new__(Slots)
    with pytest.raises(AttributeError):
        columns([Slots(1, 2), empty], ("a",))


def test_a_missing_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="d"):
        columns([Plain(1, 2)], ("d",))


def test_a_list_changed_while_read_keeps_the_rows_it_had() -> None:
    objects: list[Any] = []

    class Emptying:
        def __getattr__(self, name: str) -> str:
            objects.clear()
            return name

    objects.extend([Emptying(), Slots(1, 2)])
    assert columns(objects, ("a",)) == [["a", 1]]


@pytest.mark.parametrize(
    ("objects", "names"),
    [((Slots(1, 2),), ("a",)), ([Slots(1, 2)], ["a"]), ([Slots(1, 2)], (1,))],
)
def test_wrong_argument_types_raise_type_error(objects: Any, names: Any) -> None:
    with pytest.raises(TypeError):
        columns(objects, names)
