"""Events keep the behaviour of a frozen keyword-only dataclass with the faster `__init__`."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field

import pytest

from openprose.record import events as ev
from openprose.slots_init import install_slots_init


def test_an_event_class_sets_its_slots_directly_once_it_is_first_built() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Built:
        step: str
        note: str | None = None

    install_slots_init(Built)
    assert str(inspect.signature(Built)) == "(*, step: 'str', note: 'str | None' = None) -> None"
    assert "_set0" not in Built.__init__.__code__.co_freevars  # not compiled before it is used
    assert Built(step="1") == Built(step="1", note=None)
    assert "_set0" in Built.__init__.__code__.co_freevars
    assert str(inspect.signature(Built)) == "(*, step: 'str', note: 'str | None' = None) -> None"


def test_an_event_is_built_with_its_values_and_defaults() -> None:
    started = ev.RunStarted(run_id="r1", resumed=True)
    assert (started.step, started.run_id, started.resumed, started.inputs) == ("", "r1", True, None)
    assert started == ev.RunStarted(step="", run_id="r1", resumed=True, inputs=None)
    assert hash(started) == hash(ev.RunStarted(run_id="r1", resumed=True))


def test_an_event_stays_frozen() -> None:
    event = ev.SessionServed(step="3", binding="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.step = "4"  # type: ignore[misc]


def test_wrong_arguments_are_refused_as_the_dataclass_did() -> None:
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'step'"):
        ev.SessionServed()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        ev.SessionServed("3", "x")  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword"):
        ev.SessionServed(step="3", binding="x", nope=1)  # type: ignore[call-arg]


def test_a_class_it_cannot_build_faithfully_is_refused() -> None:
    @dataclass(slots=True, kw_only=True)
    class Mutable:
        a: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Factory:
        a: list[int] = field(default_factory=list)

    @dataclass(frozen=True, slots=True)
    class Positional:
        a: int

    for cls in (Mutable, Factory, Positional):
        with pytest.raises(TypeError):
            install_slots_init(cls)
