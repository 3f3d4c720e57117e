"""Events, and the model calls' requests and answers, keep the behaviour of their frozen
dataclasses with the faster `__init__`."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import KW_ONLY, InitVar, dataclass, field

import pytest

from openprose.net.connection import Response
from openprose.providers.base import Message, ModelRequest, ModelResponse, Usage
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

    @dataclass(frozen=True, slots=True)
    class InitOnly:
        a: int
        b: InitVar[int]

        def __post_init__(self, b: int) -> None:
            pass

    @dataclass(frozen=True, slots=True)
    class NotInit:
        a: int
        b: int = field(default=0, init=False)

    for cls in (Mutable, InitOnly, NotInit):
        with pytest.raises(TypeError):
            install_slots_init(cls)


@dataclass(frozen=True, slots=True)
class _Request:
    """Positional and keyword-only fields, a default factory and a `__post_init__`, as
    `providers.base`'s classes have."""

    model: str
    messages: tuple[str, ...]
    tokens: int = 8
    seen: list[str] = field(default_factory=list)
    _: KW_ONLY
    structured: bool = False

    def __post_init__(self) -> None:
        if self.tokens < 0:
            raise ValueError("tokens cannot be negative")


def _requests() -> list[_Request]:
    return [
        _Request("m", ()),
        _Request("m", ("a",), 3),
        _Request(model="m", messages=(), seen=["x"], structured=True),
    ]


def test_positional_fields_factories_and_post_init_are_kept() -> None:
    generated = [(r.model, r.messages, r.tokens, r.seen, r.structured) for r in _requests()]
    signature = str(inspect.signature(_Request))
    install_slots_init(_Request)
    built = _requests()
    assert _Request.__init__.__code__.co_freevars  # compiled at its first use
    assert [(r.model, r.messages, r.tokens, r.seen, r.structured) for r in built] == generated
    assert built[0].seen is not built[1].seen  # a new list each time, as the factory made
    assert str(inspect.signature(_Request)) == signature
    with pytest.raises(ValueError, match="tokens cannot be negative"):
        _Request("m", (), -1)  # __post_init__ still runs
    with pytest.raises(TypeError, match="positional"):
        _Request("m", (), 8, [], True)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built[0].tokens = 2  # type: ignore[misc]
    assert dataclasses.replace(built[1], tokens=4) == _Request("m", ("a",), 4)


def test_the_model_calls_classes_build_as_their_dataclasses_did() -> None:
    for _ in range(300):  # past `after`: their own `__init__` compiled
        ModelResponse("t", Usage(1, 2), request_id="r")
        ModelRequest("m", (Message("user", "hi"),))
        Response(200, {}, b"")
    assert "_set0" in ModelRequest.__init__.__code__.co_freevars
    request = ModelRequest("m", (Message("user", "hi", shared_prefix=2),), None, 64)
    assert request == ModelRequest(
        model="m", messages=(Message("user", "hi", (), (), 2),), max_tokens=64
    )
    assert request.messages[0].shared_prefix == 2 and request.temperature is None
    assert ModelResponse("t").usage == Usage()
    assert ModelResponse("t").usage is not ModelResponse("t").usage  # the factory's, each time
    assert Response(200, {}, b"x") == Response(status=200, headers={}, body=b"x")
    with pytest.raises(ValueError, match="message role"):
        Message("system", "x")  # Message's __post_init__


def test_a_class_built_a_few_times_keeps_the_generated_init_until_after_that_many() -> None:
    @dataclass(frozen=True, slots=True)
    class Rare:
        a: int
        b: str = "b"

    install_slots_init(Rare, after=2)
    built = [Rare(1), Rare(2, b="c")]
    assert "_set0" not in Rare.__init__.__code__.co_freevars  # nothing compiled yet
    built.append(Rare(3))
    assert "_set0" in Rare.__init__.__code__.co_freevars  # the third compiled it
    built.append(Rare(4, "d"))
    assert [(r.a, r.b) for r in built] == [(1, "b"), (2, "c"), (3, "b"), (4, "d")]
    with pytest.raises(TypeError, match="positional"):
        Rare(5, "e", 6)  # type: ignore[call-arg]
