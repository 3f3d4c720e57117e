"""`node_class` behaves as `dataclass(frozen=True, slots=True, kw_only=True)` does: checked
against a class the dataclass machinery generates from the same fields."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import FrozenInstanceError, dataclass, field

import pytest

from openprose import nodes
from openprose.node_class import node_class, open_factory, open_twin
from openprose.source import Span


@node_class
class Shared:
    span: object = field(compare=False, repr=False)
    name: str
    items: tuple[int, ...] = ()
    note: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Generated:
    span: object = field(compare=False, repr=False)
    name: str
    items: tuple[int, ...] = ()
    note: str = field(default="", compare=False)


@node_class
class Single:
    span: object = field(compare=False, repr=False)
    id: str


@node_class
class Bare:
    span: object = field(compare=False, repr=False)


CASES = [
    {"span": 1, "name": "a"},
    {"span": 2, "name": "a", "items": (1, 2), "note": "x"},
    {"span": None, "name": "b", "items": (3,)},
]


@pytest.mark.parametrize("left", CASES)
@pytest.mark.parametrize("right", CASES)
def test_equality_and_hash_as_generated(left: dict[str, object], right: dict[str, object]) -> None:
    shared = (Shared(**left), Shared(**right))  # type: ignore[arg-type]
    generated = (Generated(**left), Generated(**right))  # type: ignore[arg-type]
    assert (shared[0] == shared[1]) == (generated[0] == generated[1])
    assert (hash(shared[0]) == hash(shared[1])) == (hash(generated[0]) == hash(generated[1]))
    assert repr(shared[0]).replace("Shared", "Generated") == repr(generated[0])


def test_one_and_no_compared_fields() -> None:
    assert Single(span=1, id="x") == Single(span=2, id="x") != Single(span=1, id="y")
    assert hash(Single(span=1, id="x")) == hash(("x",))
    assert Bare(span=1) == Bare(span=2) and hash(Bare(span=1)) == hash(())
    assert repr(Bare(span=1)) == "Bare()"
    assert Single(span=1, id="x").__eq__(Shared(span=1, name="x")) is NotImplemented


def test_frozen_and_copied() -> None:
    node = Shared(span=1, name="a", items=(1,), note="n")
    with pytest.raises(FrozenInstanceError):
        node.name = "b"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del node.name  # type: ignore[misc]
    for copied in (copy.copy(node), copy.deepcopy(node), pickle.loads(pickle.dumps(node))):
        assert copied == node and copied.span == 1 and copied.note == "n"
    changed = dataclasses.replace(node, name="b")
    assert changed.name == "b" and changed.items == (1,) and changed.span == 1
    assert not hasattr(node, "__dict__")


def test_signature_and_fields_as_generated() -> None:
    assert str(inspect.signature(Shared)) == str(inspect.signature(Generated))
    with pytest.raises(TypeError):
        Shared("a")  # type: ignore[misc]
    assert [f.name for f in dataclasses.fields(Shared)] == ["span", "name", "items", "note"]


def test_the_tree_nodes_compare_without_spans() -> None:
    here, there = Span(0, 1, 1, 1, 1, 2), Span(5, 6, 2, 1, 2, 2)
    assert nodes.Name(span=here, id="x") == nodes.Name(span=there, id="x")
    assert repr(nodes.Name(span=here, id="x")) == "Name(id='x')"
    program = nodes.Program(span=here, body=(), path="a.prose")
    assert program == nodes.Program(span=there, body=(), path="b.prose")
    assert repr(program) == "Program(body=(), path='a.prose')"


SPAN = Span(2, 9, 1, 3, 1, 10)


@pytest.mark.parametrize(
    ("made", "built"),
    [
        (nodes.new_name(SPAN, "draft"), nodes.Name(span=SPAN, id="draft")),
        (
            nodes.new_string_lit(
                SPAN, "a {x}", ("a ", nodes.Interpolation(span=SPAN, name="x")), True
            ),
            nodes.StringLit(
                span=SPAN,
                value="a {x}",
                parts=("a ", nodes.Interpolation(span=SPAN, name="x")),
                triple=True,
            ),
        ),
        (
            nodes.new_property(
                SPAN, nodes.Name(span=SPAN, id="model"), nodes.Name(span=SPAN, id="opus")
            ),
            nodes.Property(
                span=SPAN,
                name=nodes.Name(span=SPAN, id="model"),
                value=nodes.Name(span=SPAN, id="opus"),
            ),
        ),
        (
            nodes.new_session(SPAN, "resume", None, nodes.Name(span=SPAN, id="w"), None, ()),
            nodes.Session(span=SPAN, kind="resume", agent=nodes.Name(span=SPAN, id="w")),
        ),
    ],
)
def test_the_factories_build_the_constructors_nodes(made: object, built: object) -> None:
    assert type(made) is type(built)
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert [getattr(made, f.name) for f in dataclasses.fields(built)] == [  # type: ignore[arg-type]
        getattr(built, f.name)
        for f in dataclasses.fields(built)  # type: ignore[arg-type]
    ]
    assert pickle.loads(pickle.dumps(made)) == built and copy.deepcopy(made) == built
    with pytest.raises(FrozenInstanceError):
        made.span = SPAN  # type: ignore[attr-defined]


def test_open_twin_refuses_a_subclass() -> None:
    @node_class
    class Child(Shared):
        extra: int = 0

    with pytest.raises(TypeError, match="only a class made directly on object"):
        open_twin(Child)
    twin = open_twin(Shared)
    made = twin()
    made.span, made.name, made.items, made.note = SPAN, "n", (1,), "x"
    made.__class__ = Shared
    assert made == Shared(span=None, name="n", items=(1,)) and made.note == "x"


def test_open_factory_takes_the_constructors_keywords_and_builds_its_instance() -> None:
    new_shared = open_factory(Shared)
    assert [
        (p.name, p.kind, p.default) for p in inspect.signature(new_shared).parameters.values()
    ] == [(p.name, p.kind, p.default) for p in inspect.signature(Shared).parameters.values()]
    for case in CASES:
        made, built = new_shared(**case), Shared(**case)  # type: ignore[arg-type]
        assert type(made) is Shared
        assert [getattr(made, name) for name in Shared._all] == [  # type: ignore[attr-defined]
            getattr(built, name)
            for name in Shared._all  # type: ignore[attr-defined]
        ]
        assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
        with pytest.raises(FrozenInstanceError):
            made.name = "b"  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'name'"):
        new_shared(span=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'nme'"):
        new_shared(span=1, name="a", nme="b")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        new_shared(1, "a")  # type: ignore[misc]


def test_open_factory_builds_positional_fields_and_default_factories_as_init_does() -> None:
    @dataclass(frozen=True, slots=True)
    class Mixed:
        name: str
        items: list[int] = field(default_factory=list)
        count: int = field(default=0, kw_only=True)

    new_mixed = open_factory(Mixed)
    first, second = new_mixed("a"), new_mixed("a")
    assert first == Mixed("a") and type(first) is Mixed
    assert first.items is not second.items  # a fresh list each time, as __init__ gives
    given = [1]
    assert new_mixed("b", given, count=2) == Mixed("b", [1], count=2)
    assert new_mixed("b", given).items is given
    with pytest.raises(TypeError):
        new_mixed("b", [1], 2)  # type: ignore[misc]  # count is keyword-only


def test_open_factory_refuses_what_it_cannot_build_as_init_does() -> None:
    @dataclass(frozen=True)
    class Unslotted:
        name: str

    @node_class
    class Child(Shared):
        extra: int = 0

    with pytest.raises(TypeError, match="only a class made directly on object"):
        open_factory(Child)
    with pytest.raises(TypeError, match="only a frozen, slotted dataclass"):
        open_factory(Unslotted)
