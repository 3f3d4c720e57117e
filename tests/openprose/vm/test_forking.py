"""What a fork takes from its parent's journal (`vm.forking`): the calls finished before the
step started, each once, at its own step, for an identical request only."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from openprose.providers.base import Message, ModelRequest, ModelResponse
from openprose.record.codec import encode
from openprose.record.events import Event, RunStarted, SessionFinished, SessionStarted
from openprose.vm.forking import ParentAnswers, UnknownStep, cut_at, fork_steps, within


def request(prompt: str, model: str = "m") -> ModelRequest:
    return ModelRequest(model, (Message("user", prompt),))


def line(event: Event) -> dict[str, Any]:
    """The journal line of `event`, as a reader gets it."""
    record: dict[str, Any] = orjson.loads(encode(event, 1.0))
    return record


def started(step: str, binding: str | None = None) -> dict[str, Any]:
    return line(SessionStarted(step=step, agent=None, model="m", binding=binding, kind="session"))


def finished(step: str, prompt: str, answer: str, binding: str | None = None) -> dict[str, Any]:
    return line(
        SessionFinished(
            step=step,
            request=request(prompt).to_dict(),
            response=ModelResponse(answer).to_dict(),
            agent=None,
            model="m",
            binding=binding,
            attempt=1,
            elapsed=0.0,
            kind="session",
        )
    )


# A parallel block at 3: branch 2 finishes before branch 1 has started its second call.
JOURNAL = [
    line(RunStarted(run_id="r", resumed=False)),
    started("2", "outline"),
    finished("2", "Outline", "O", "outline"),
    started("3|1.1"),
    started("3|2"),
    finished("3|2", "Side", "S"),
    finished("3|1.1", "First", "F1"),
    started("3|1.2"),
    started("3|1.2?c1~1"),
    finished("3|1.2?c1~1", "Judge", "yes"),
    finished("3|1.2", "Second", "F2"),
    started("4", "final"),
    finished("4", "Final", "done", "final"),
]


@pytest.mark.parametrize(
    ("step", "outer", "inside"),
    [
        ("3", "3", True),
        ("3.1", "3", True),
        ("3|2", "3", True),
        ("3~t2", "3", True),
        ("3?c1~1", "3", True),
        ("30", "3", False),
        ("3", "3.1", False),
        ("4", "3", False),
    ],
)
def test_within(step: str, outer: str, inside: bool) -> None:
    assert within(step, outer) is inside


def test_the_steps_a_fork_may_start_at_in_the_order_reached() -> None:
    assert fork_steps(JOURNAL) == ["2", "3|1.1", "3|2", "3|1.2", "3|1.2?c1~1", "4"]


def test_the_cut_holds_what_had_finished_when_the_step_started() -> None:
    # a sibling branch that finished before the step started is taken; the step's own
    # judgment is within it and asked again
    cut = cut_at(JOURNAL, "3|1.2")
    assert sorted(cut.answers) == ["2", "3|1.1", "3|2"]
    assert cut.bound_at == {"outline": "2"}
    # a branch still running when the step started is asked again
    assert sorted(cut_at(JOURNAL, "3|2").answers) == ["2"]
    assert sorted(cut_at(JOURNAL, "2").answers) == []
    assert sorted(cut_at(JOURNAL, "4").answers) == ["2", "3|1.1", "3|1.2", "3|1.2?c1~1", "3|2"]


def test_a_statement_holding_steps_is_asked_again_whole() -> None:
    assert sorted(cut_at(JOURNAL, "3").answers) == ["2"]  # the parallel block
    assert sorted(cut_at(JOURNAL, "3|1").answers) == ["2"]  # its first branch


@pytest.mark.parametrize("step", ["5", "3|3", "3|1.3", "", "2.1"])
def test_an_unknown_step_names_the_steps(step: str) -> None:
    with pytest.raises(UnknownStep) as raised:
        cut_at(JOURNAL, step)
    assert raised.value.steps == fork_steps(JOURNAL)


def test_an_answer_serves_only_its_own_step_an_identical_request_and_once() -> None:
    answers = ParentAnswers("parent", cut_at(JOURNAL, "4"))
    assert answers.take("3|2", request("Outline")) is None  # another step's request
    assert answers.take("2", request("Outline", model="other")) is None  # another model
    assert answers.take("2", request("Outline changed")) is None
    taken = answers.take("2", request("Outline"))
    assert taken is not None
    assert taken.response.text == "O" and taken.origin == {"run": "parent", "step": "2"}
    assert answers.take("2", request("Outline")) is None  # once
    assert answers.take("4", request("Final")) is None  # the step itself is asked


def test_a_set_value_answers_the_binding_whatever_its_request() -> None:
    answers = ParentAnswers("parent", cut_at(JOURNAL, "4"), {"outline": "mine"})
    taken = answers.take("2", request("Outline about something else"))
    assert taken is not None
    assert taken.response.text == "mine" and taken.origin == {"set": "outline"}
    assert answers.take("2", request("Outline")) is None  # the parent's answer is not used
