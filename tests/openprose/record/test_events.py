"""The events' factories (`new_session_started`, ...) build the instance the class's
`__init__` builds, for any field values: same class, every field the same object, the same
`==`, hash, repr, pickle and journal line."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import FrozenInstanceError, fields
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from openprose.record import events as ev
from openprose.record.codec import encode
from tests.openprose.record.strategies import FLOAT, keywords_of

FACTORIES: dict[Callable[..., Any], type[Any]] = {
    ev.new_session_started: ev.SessionStarted,
    ev.new_session_finished: ev.SessionFinished,
}


def test_every_factory_of_the_module_is_checked_here() -> None:
    made = {value for name, value in vars(ev).items() if name.startswith("new_")}
    assert made == set(FACTORIES)


def _factory_and_keywords() -> st.SearchStrategy[tuple[Callable[..., Any], dict[str, Any]]]:
    return st.one_of(
        *(st.tuples(st.just(factory), keywords_of(cls)) for factory, cls in FACTORIES.items())
    )


@settings(max_examples=400)
@given(_factory_and_keywords(), FLOAT)
@example(
    (ev.new_session_finished, {
        "step": "2:1[0].1", "request": {"model": "m", "messages": []}, "response": {"text": "a"},
        "agent": None, "model": "sonnet", "binding": None, "attempt": 1, "elapsed": 0.04,
        "kind": "session",
    }),
    1.5,
)  # fmt: skip
@example((ev.new_session_started, {"step": "1", "agent": None, "model": "m", "binding": None,
                                   "kind": "session", "context": []}), 0.0)  # fmt: skip
def test_a_factory_builds_what_init_builds(
    case: tuple[Callable[..., Any], dict[str, Any]], t: float
) -> None:
    factory, keywords = case
    cls = FACTORIES[factory]
    made, built = factory(**keywords), cls(**keywords)
    assert type(made) is cls
    for item in fields(cls):
        assert getattr(made, item.name) is getattr(built, item.name), item.name
    assert made == built and repr(made) == repr(built)
    try:
        expected = hash(built)
    except TypeError:  # a list or dict among the fields, as `__init__`'s would have
        with pytest.raises(TypeError):
            hash(made)
    else:
        assert hash(made) == expected
    assert encode(made, t) == encode(built, t)
    assert pickle.loads(pickle.dumps(made)) == built
    with pytest.raises(FrozenInstanceError):
        made.step = "x"


def test_a_factory_refuses_what_init_refuses() -> None:
    with pytest.raises(TypeError, match="required keyword-only argument: 'kind'"):
        ev.new_session_started(step="1", agent=None, model="m", binding=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'modle'"):
        ev.new_session_started(  # type: ignore[call-arg]
            step="1", agent=None, modle="m", binding=None, kind="session"
        )
