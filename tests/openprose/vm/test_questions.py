"""A question and its answers: choosing an option by number or text, the seal an answer needs,
and the terminal asker (on a pipe: its answer, its default, its timeout, end of input)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator

import pytest

from openprose.record.approval_seal import approval_key
from openprose.vm.questions import (
    TIMED_OUT,
    AnswerError,
    Question,
    QuestionPending,
    TerminalAsker,
    reply_event,
    reply_problem,
)
from openprose.vm.tools.approvals import ApprovalPending

PLAN = Question(id="q1", step="2", text="Which plan?", options=("Fast", "Safe"), default="Safe")


@pytest.mark.parametrize(
    ("given", "taken"),
    [("1", "Fast"), ("2", "Safe"), ("safe", "Safe"), ("  FAST ", "Fast")],
)
def test_an_option_is_chosen_by_number_or_text(given: str, taken: str) -> None:
    assert PLAN.choose(given) == taken


@pytest.mark.parametrize("given", ["0", "3", "medium", ""])
def test_anything_else_is_not_an_option(given: str) -> None:
    with pytest.raises(AnswerError, match=r"1\) Fast, 2\) Safe"):
        PLAN.choose(given)


def test_free_text_is_taken_as_it_is() -> None:
    free = Question(id="q1", step="1", text="Name?")
    assert free.choose(" 2 ") == " 2 "


def test_the_digest_covers_wording_options_and_default() -> None:
    digests = {
        PLAN.digest,
        Question(id="q1", step="2", text="Which plan!", options=PLAN.options).digest,
        Question(id="q1", step="2", text="Which plan?", options=("Fast",)).digest,
        Question(id="q1", step="2", text="Which plan?", options=PLAN.options).digest,
    }
    assert len(digests) == 4


def test_a_pending_question_pauses_like_an_approval() -> None:
    # the run stops `waiting` and a `try` keeps its `finally` for the resume
    assert isinstance(QuestionPending(PLAN), ApprovalPending)


def test_a_sealed_answer_holds_only_as_written() -> None:
    key = approval_key()
    event = reply_event(key, "run-1", PLAN, "Fast", "cli", 1_800_000_000.25)
    assert reply_problem(event, PLAN, "run-1") == ""
    assert "seal" in reply_problem(event, PLAN, "run-2")  # another run
    for field, value in [("answer", "Safe"), ("by", "api"), ("user", "mallory"), ("answered", 1.0)]:
        assert reply_problem({**event, field: value}, PLAN, "run-1") != "", field
    reworded = Question(id="q1", step="2", text="Which plan now?", options=PLAN.options)
    assert "another wording" in reply_problem(event, reworded, "run-1")
    assert "no seal" in reply_problem({k: v for k, v in event.items() if k != "seal"}, PLAN, "r")


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """stdin a pipe the test writes to (what is asked goes to stderr: `capsys`)."""
    read, write = os.pipe()
    stdin = os.fdopen(read, "r")
    monkeypatch.setattr(sys, "stdin", stdin)
    try:
        yield write
    finally:
        stdin.close()
        try:
            os.close(write)
        except OSError:
            pass


def test_the_terminal_asks_again_until_an_option_is_given(
    terminal: int, capsys: pytest.CaptureFixture[str]
) -> None:
    os.write(terminal, b"maybe\n2\n")
    assert TerminalAsker._ask_blocking(PLAN) == "Safe"
    shown = capsys.readouterr().err
    assert "question q1: Which plan?" in shown and "[2] Safe  (default)" in shown
    assert "'maybe' is not one of the options" in shown


def test_enter_takes_the_default(terminal: int) -> None:
    os.write(terminal, b"\n")
    assert TerminalAsker._ask_blocking(PLAN) == "Safe"


def test_no_answer_in_time_is_timed_out(terminal: int) -> None:
    timed = Question(id="q1", step="1", text="Go?", default="no", timeout=0.2, asked_at=time.time())
    started = time.monotonic()
    assert TerminalAsker._ask_blocking(timed) is TIMED_OUT
    assert time.monotonic() - started < 5


def test_end_of_input_leaves_the_run_waiting(terminal: int) -> None:
    os.close(terminal)
    with pytest.raises(QuestionPending):
        TerminalAsker._ask_blocking(PLAN)


def test_the_terminal_says_when_the_time_ran_out(
    terminal: int, capsys: pytest.CaptureFixture[str]
) -> None:
    timed = Question(id="q3", step="1", text="Go?", default="no", timeout=0.1, asked_at=time.time())
    assert TerminalAsker._ask_blocking(timed) is TIMED_OUT
    assert "prose: no answer to q3 in time: took 'no'" in capsys.readouterr().err
