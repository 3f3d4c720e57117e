"""Event classes behave as frozen dataclasses with methods shared instead of compiled per
class (`record/frozen.py`): equality, hash, repr, refusal to change, copies and pickles."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from openprose.record import events as ev
from openprose.record.frozen import frozen_dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Reference:
    """What `dataclasses` makes of the same fields: the behaviour to keep."""

    step: str
    n: int = 0
    note: str | None = field(default=None, metadata={"omit": True})


@frozen_dataclass(frozen=True, slots=True, kw_only=True)
class Shared:
    step: str
    n: int = 0
    note: str | None = field(default=None, metadata={"omit": True})


def test_equality_hash_and_repr_are_the_dataclass_ones() -> None:
    ours, theirs = Shared(step="1", n=2), Reference(step="1", n=2)
    assert ours == Shared(step="1", n=2) and ours != Shared(step="1", n=3)
    assert hash(ours) == hash(theirs) == hash(("1", 2, None))
    assert repr(ours) == repr(theirs).replace("Reference", "Shared")
    assert ours != theirs and (ours == object()) is False  # type: ignore[comparison-overlap]
    assert [f.metadata for f in dataclasses.fields(ours)] == [
        f.metadata for f in dataclasses.fields(theirs)
    ]


def test_a_field_cannot_be_changed_or_deleted() -> None:
    event = ev.SessionServed(step="3", binding="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.binding = "y"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del event.binding
    with pytest.raises(AttributeError):
        event.other = 1  # type: ignore[attr-defined]
    assert event.binding == "x"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.Streamed(step="1", text="a").text = "b"  # type: ignore[misc]


def test_copies_pickles_and_replace_keep_the_values() -> None:
    event = ev.SessionFailed(step="2", attempt=1, error="boom", request={"messages": []})
    assert pickle.loads(pickle.dumps(event)) == event
    deep = copy.deepcopy(event)
    assert deep == event and deep.request is not event.request
    assert dataclasses.replace(event, error="other").error == "other"
    assert hash(ev.SessionServed(step="1")) == hash(ev.SessionServed(step="1", binding=None))


def test_one_and_no_field_classes_compare_by_their_values() -> None:
    @frozen_dataclass(frozen=True, slots=True, kw_only=True)
    class One:
        step: str

    @frozen_dataclass(frozen=True, slots=True, kw_only=True)
    class Empty:
        pass

    assert One(step="a") == One(step="a") != One(step="b")
    assert hash(One(step="a")) == hash(("a",)) and Empty() == Empty()


def test_only_frozen_slotted_classes_are_made() -> None:
    with pytest.raises(TypeError):
        frozen_dataclass(frozen=False, slots=True, kw_only=True)
