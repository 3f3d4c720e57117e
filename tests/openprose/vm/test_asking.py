"""`ask "question"` in the VM: the run waits for an answer (exit 4's `waiting`), a sealed answer
is bound on resume and never asked again, a forged one is ignored and reported, a timeout
takes the default (or fails catchably), and an asker in the process answers at once."""

from __future__ import annotations

import asyncio
import io
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprose.parser import parse_text
from openprose.record.codec import decode
from openprose.vm.progress import PlainProgress
from openprose.vm.questions import TIMED_OUT, AnswerError, Question
from openprose.vm.replies import answer_pending, pending_questions
from openprose.vm.runner import RunResult, resume_run, run_program
from openprose.vm.runtime import ToolRuntime
from tests.openprose.vm.conftest import FAST, VM

PLAN = """\
let plan = ask "Which plan for the launch?"
  options: ["fast", "safe"]
  default: "safe"
output report = session "Write the {plan} plan"
"""


class ScriptedAsker:
    """Answers as a person at the terminal would (or lets the time run out)."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = list(answers)
        self.asked: list[Question] = []

    async def ask(self, question: Question) -> str | None:
        self.asked.append(question)
        return self.answers.pop(0)


class NoOneMayAsk:
    async def ask(self, question: Question) -> str | None:
        raise AssertionError(f"asked again: {question.describe()}")


def _run(vm: VM, source: str, provider: Any, asker: Any = None) -> RunResult:
    parsed = parse_text(source, str(vm.project / "main.prose"))
    assert parsed.ok, [d.message for d in parsed.diagnostics]
    tools = ToolRuntime(asker=asker) if asker is not None else None
    return asyncio.run(
        run_program(
            parsed.program,
            source,
            provider=provider,
            project_dir=vm.project,
            config=FAST,
            tools=tools,
        )
    )


def _resume(vm: VM, run_dir: Path, provider: Any, asker: Any = None) -> RunResult:
    text = (run_dir / "program.prose").read_text()
    parsed = parse_text(text, str(vm.project / "main.prose"))
    tools = ToolRuntime(asker=asker) if asker is not None else None
    return asyncio.run(
        resume_run(run_dir, parsed.program, provider=provider, project_dir=vm.project, tools=tools)
    )


def _append(run_dir: Path, event: dict[str, Any]) -> None:
    with (run_dir / "journal.jsonl").open("ab") as journal:
        journal.write(orjson.dumps(event) + b"\n")


def test_nobody_to_ask_waits_then_the_answer_is_bound_on_resume(vm: VM) -> None:
    provider = vm.spy(default="written")
    first = _run(vm, PLAN, provider)
    assert first.status == "waiting"
    assert "prose answer" in (first.error or "") and "q1" in (first.error or "")
    assert provider.requests == []  # nothing after the question ran
    (asked,) = vm.events(first, "question_asked")
    assert (asked["id"], asked["options"], asked["default"]) == ("q1", ["fast", "safe"], "safe")
    assert [q.id for q in pending_questions(first.run_dir)] == ["q1"]

    answered = answer_pending(first.run_dir, "1", by="api")  # the first option, by number
    assert answered["answer"] == "fast"
    assert pending_questions(first.run_dir) == []

    again = vm.spy(default="written")
    second = _resume(vm, first.run_dir, again, NoOneMayAsk())
    assert second.status == "succeeded", second.error
    assert second.outputs == {"report": "written"}
    assert again.prompts()[-1].startswith("Write the fast plan")
    (reply,) = vm.events(second, "question_answered")
    assert (reply["by"], reply["answer"], reply["seal"] != "") == ("api", "fast", True)
    assert "answer q1: 'fast'" in (first.run_dir / "state.md").read_text()


def test_an_answer_given_in_the_process_is_journaled_and_never_asked_again(vm: VM) -> None:
    source = PLAN + 'session "Review the {plan} plan"\n'
    failing = vm.spy([{"match": "Review", "answer": "x", "failures": ["error"] * 9}])
    asker = ScriptedAsker("fast")
    first = _run(vm, source, failing, asker)
    assert first.status == "failed"  # after the answer: the review failed
    assert [q.id for q in asker.asked] == ["q1"]
    (reply,) = vm.events(first, "question_answered")
    assert (reply["by"], reply["answer"]) == ("terminal", "fast")

    second = _resume(vm, first.run_dir, vm.spy(default="reviewed"), NoOneMayAsk())
    assert second.status == "succeeded", second.error
    assert vm.events(second, "question_asked") == vm.events(first, "question_asked")


@pytest.mark.parametrize(
    "forged",
    [
        pytest.param({}, id="no seal"),
        pytest.param({"seal": "0" * 64}, id="a seal that does not hold"),
    ],
)
def test_a_forged_answer_is_ignored_reported_and_the_run_waits_again(
    vm: VM, forged: dict[str, Any]
) -> None:
    first = _run(vm, PLAN, vm.spy(default="written"))
    (asked,) = vm.events(first, "question_asked")
    line = {"ev": "question_answered", "step": "1", "t": time.time(), "id": "q1"}
    _append(first.run_dir, {**line, "answer": "fast", "by": "cli", "answered": 1.0, **forged})
    assert [q.id for q in pending_questions(first.run_dir)] == ["q1"]  # still waiting

    provider = vm.spy(default="written")
    second = _resume(vm, first.run_dir, provider)
    assert second.status == "waiting"
    assert provider.requests == []
    (ignored,) = vm.events(second, "question_ignored")
    assert ignored["id"] == "q1" and "seal" in ignored["reason"]
    assert asked["digest"] == vm.events(second, "question_asked")[0]["digest"]


def test_an_answer_sealed_for_another_run_is_ignored(vm: VM) -> None:
    one = _run(vm, PLAN, vm.spy())
    other = _run(vm, PLAN, vm.spy())
    answer_pending(one.run_dir, "safe")
    (sealed,) = vm.events(one, "question_answered")
    _append(other.run_dir, sealed)  # copied across: the same question, another run
    assert [q.id for q in pending_questions(other.run_dir)] == ["q1"]
    second = _resume(vm, other.run_dir, vm.spy())
    assert second.status == "waiting"
    assert vm.events(second, "question_ignored")


def test_the_default_is_taken_once_the_timeout_has_passed(vm: VM) -> None:
    source = PLAN.replace('default: "safe"\n', 'default: "safe"\n  timeout: 1\n')
    first = _run(vm, source, vm.spy(default="written"))
    assert first.status == "waiting"
    time.sleep(1.05)
    provider = vm.spy(default="written")
    second = _resume(vm, first.run_dir, provider, NoOneMayAsk())
    assert second.status == "succeeded", second.error
    assert provider.prompts()[-1].startswith("Write the safe plan")
    (reply,) = vm.events(second, "question_answered")
    assert (reply["by"], reply["answer"]) == ("timeout", "safe")
    assert "took the default" in (first.run_dir / "state.md").read_text()
    lines = io.StringIO()
    PlainProgress(lines)(decode(reply).event, reply["t"])
    assert "✎ 1 q1: no answer in time, took the default 'safe'" in lines.getvalue()


def test_a_timeout_without_a_default_fails_catchably(vm: VM) -> None:
    source = (
        "try:\n"
        '  let go = ask "Ship it?" timeout: "1s"\n'
        "catch as problem:\n"
        '  session "Handle {problem.message}"\n'
    )
    asker = ScriptedAsker(TIMED_OUT)
    provider = vm.spy(default="handled")
    result = _run(vm, source, provider, asker)
    assert result.status == "succeeded", result.error
    assert "nobody answered q1" in provider.prompts()[-1]
    assert vm.events(result, "question_expired")


def test_the_answer_is_context_for_the_next_session(vm: VM) -> None:
    provider = vm.spy(default="ok")
    result = _run(
        vm,
        'ask "What is the budget?"\nsession "Plan the trip"\n',
        provider,
        ScriptedAsker("200 EUR"),
    )
    assert result.status == "succeeded", result.error
    assert "200 EUR" in str(provider.requests[-1].messages)


def test_options_from_a_variable_and_a_default_outside_them_fail_at_run_time(vm: VM) -> None:
    source = 'let choices = ["a", "b"]\nlet x = ask "Pick" options: choices default: "c"\n'
    result = _run(vm, source, vm.spy(), ScriptedAsker("a"))
    assert result.status == "failed"
    assert "not one of the options" in (result.error or "")


def test_an_answer_outside_the_options_is_refused_and_nothing_written(vm: VM) -> None:
    first = _run(vm, PLAN, vm.spy())
    before = (first.run_dir / "journal.jsonl").read_bytes()
    with pytest.raises(AnswerError, match="not one of the options of q1"):
        answer_pending(first.run_dir, "3")
    with pytest.raises(AnswerError, match="no question q9"):
        answer_pending(first.run_dir, "fast", "q9")
    assert (first.run_dir / "journal.jsonl").read_bytes() == before


def test_a_question_in_a_loop_is_a_new_question_each_time(vm: VM) -> None:
    source = 'repeat 2 as i:\n  ask "Round {i}: go on?"\n'
    asker = ScriptedAsker("yes", "no")
    result = _run(vm, source, vm.spy(), asker)
    assert result.status == "succeeded", result.error
    assert [q.id for q in asker.asked] == ["q1", "q2"]
    assert [q.text for q in asker.asked] == ["Round 0: go on?", "Round 1: go on?"]


def test_questions_in_parallel_branches_wait_together(
    vm: VM, caplog: pytest.LogCaptureFixture
) -> None:
    import gc

    source = (
        'parallel:\n  a = ask "First?"\n  b = ask "Second?"\n'
        'output both = session "Combine {a} and {b}"\n'
    )
    first = _run(vm, source, vm.spy(default="combined"))
    gc.collect()  # an exception no one took would be logged now
    assert first.status == "waiting"
    assert [q.id for q in pending_questions(first.run_dir)] == ["q1", "q2"]
    assert "never retrieved" not in caplog.text
    with pytest.raises(AnswerError, match="2 questions waiting; name one"):
        answer_pending(first.run_dir, "yes")
    answer_pending(first.run_dir, "yes", "q1")
    answer_pending(first.run_dir, "no", "q2")
    provider = vm.spy(default="combined")
    second = _resume(vm, first.run_dir, provider, NoOneMayAsk())
    assert second.status == "succeeded", second.error
    assert provider.prompts()[-1].startswith("Combine yes and no")


def test_a_damaged_question_event_is_named_and_nothing_is_served(vm: VM) -> None:
    from openprose.record.runstore import DamagedRun

    first = _run(vm, PLAN, vm.spy())
    journal = first.run_dir / "journal.jsonl"
    journal.write_text(journal.read_text().replace('"timeout":null', '"timeout":"soon"'))
    with pytest.raises(DamagedRun, match=r"question_asked, step '1'\) is damaged"):
        _resume(vm, first.run_dir, vm.spy())
