"""A case answers the program's `ask` questions: the answer goes through `prose answer`'s
path (sealed, journaled `by: "test"`) and the run is resumed; a question the case does not
answer fails it at once, naming the question, unless a default and a timeout settle it."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

import openprose
from openprose.testing.answering import CaseAnswers
from openprose.vm.questions import Question, reply_problem

GATE = """\
let notes = session "Draft the release notes"

let verdict = ask "Ship release {notes}?"
  options: ["approve", "hold"]

output decision = ""
if **the verdict is approve**:
  decision = session "Announce the release"
    context: verdict
else:
  decision = session "Write why the release waits"
    context: verdict
"""
# The scripted model: the draft names the release, the evaluator reads the verdict it sees.
RULES = r"""
rules = [
  { match = "^Draft", answer = "v2" },
  { system = "evaluator", match = 'approve\s*$', answer = '{"verdict": true, "reason": "ok"}' },
  { system = "evaluator", answer = '{"verdict": false, "reason": "held"}' },
  { match = "^Announce", answer = "v2 is out" },
  { match = "^Write why", answer = "v2 waits" },
]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scratch").mkdir()  # the cases' temporary folders (a failed one is kept)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    return tmp_path


def _suite(project: Path, program: str, cases: str) -> Any:
    (project / "gate.prose").write_text(program)
    (project / "gate.test.toml").write_text(cases)
    return openprose.test(["gate.test.toml"])


def _case(name: str, body: str) -> str:
    return f'[[case]]\nname = "{name}"\n{RULES}{body}\n'


def _journal(outcome: Any) -> list[dict[str, Any]]:
    assert outcome.kept_run is not None
    lines = (outcome.kept_run / "journal.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines]


def test_answers_by_text_and_by_id_reach_the_outputs(project: Path) -> None:
    suite = _suite(
        project,
        GATE,
        _case(
            "approved",
            'answers = { "Ship release v2?" = "approve" }\n'
            'expect = [{ of = "output.decision", equals = "v2 is out" },'
            ' { of = "binding.verdict", equals = "approve" },'
            ' { of = "questions", equals = ["Ship release v2?"] }]',
        )
        + _case(
            "held by number",
            'answers = { q1 = "2" }\n'  # an option chosen by its number, as `prose answer`
            'expect = [{ of = "output.decision", equals = "v2 waits" }]',
        ),
    )
    assert suite.passed, [o.failures for o in suite.outcomes]


def test_the_answer_is_sealed_and_journaled_as_from_the_test(project: Path) -> None:
    suite = _suite(
        project,
        GATE,
        _case(
            "kept",
            'answers = { "Ship release v2?" = "approve" }\n'
            'expect = [{ of = "sessions", equals = 99 }]',  # fails: the run is kept to read
        ),
    )
    (outcome,) = suite.outcomes
    assert outcome.outcome == "failed"
    journal = _journal(outcome)
    asked = next(e for e in journal if e["ev"] == "question_asked")
    (answered,) = [e for e in journal if e["ev"] == "question_answered"]
    assert (answered["answer"], answered["by"]) == ("approve", "test")
    run_id = orjson.loads((outcome.kept_run / "run.json").read_bytes())["run_id"]
    assert reply_problem(answered, Question.from_event(asked), run_id) == ""
    assert [e["status"] for e in journal if e["ev"] == "run_finished"][-1] == "succeeded"


def test_a_question_without_an_answer_fails_the_case_naming_it(project: Path) -> None:
    started = time.monotonic()
    suite = _suite(project, GATE, _case("silent", ""))
    (outcome,) = suite.outcomes
    assert outcome.outcome == "failed"
    assert outcome.failures[0] == (
        "the program asked q1 'Ship release v2?' (options: approve, hold) and the case gives "
        'no answer: add `answers = { "Ship release v2?" = "..." }` to the case'
    )
    assert time.monotonic() - started < 60  # never waits for a person


def test_an_answer_outside_the_options_is_refused(project: Path) -> None:
    suite = _suite(project, GATE, _case("maybe", 'answers = { q1 = "maybe" }'))
    (outcome,) = suite.outcomes
    assert outcome.outcome == "failed"
    assert outcome.failures == [
        (
            "the case's answer to q1 'Ship release v2?' is refused: 'maybe' is not one of the "
            "options of q1: 1) approve, 2) hold (answer with the number or the text)"
        )
    ]


def test_an_answer_to_a_question_never_asked_fails(project: Path) -> None:
    suite = _suite(
        project,
        GATE,
        _case("typo", 'answers = { q1 = "approve", "Ship release v3?" = "approve" }'),
    )
    (outcome,) = suite.outcomes
    assert outcome.failures == [
        (
            "gate.test.toml:1: the case answers 'Ship release v3?', which the program never "
            "asked (it asked: 'Ship release v2?')"
        )
    ]


WITH_DEFAULT = """\
let go = ask "Deploy now?"
  options: ["yes", "no"]
  default: "no"
  timeout: "1h"
output said = session "Say {go}"
"""


def test_a_default_with_a_timeout_is_taken_at_once_when_unanswered(project: Path) -> None:
    started = time.monotonic()
    suite = _suite(
        project,
        WITH_DEFAULT,
        '[[case]]\nname = "nobody"\nrules = [{ match = "^Say", answer = "said" }]\n'
        'expect = [{ of = "binding.go", equals = "no" }, { of = "sessions", equals = 2 }]\n',
    )
    (outcome,) = suite.outcomes
    assert time.monotonic() - started < 60  # not the hour
    assert outcome.failures[0].endswith("sessions: expected 2, got 1")  # kept, to be read
    (answered,) = [e for e in _journal(outcome) if e["ev"] == "question_answered"]
    assert (answered["answer"], answered["by"]) == ("no", "timeout")


def test_a_default_without_a_timeout_still_needs_an_answer(project: Path) -> None:
    program = WITH_DEFAULT.replace('  timeout: "1h"\n', "")
    suite = _suite(
        project, program, '[[case]]\nname = "nobody"\nrules = [{ match = "", answer = "x" }]\n'
    )
    (outcome,) = suite.outcomes
    assert outcome.failures[0].startswith("the program asked q1 'Deploy now?' (options: yes, no)")


def test_a_list_answers_each_asking_in_order(project: Path) -> None:
    program = 'let a = ask "Ship it?"\nlet b = ask "Ship it?"\noutput both = "{a} {b}"\n'
    suite = _suite(
        project,
        program,
        '[[case]]\nname = "twice"\nrules = [{ match = "", answer = "x" }]\n'
        'answers = { "Ship it?" = ["yes", "no"] }\n'
        'expect = [{ of = "output.both", equals = "yes no" },'
        ' { of = "questions", equals = ["Ship it?", "Ship it?"] }]\n'
        '\n[[case]]\nname = "once only"\nrules = [{ match = "", answer = "x" }]\n'
        'answers = { "Ship it?" = ["yes"] }\n',
    )
    twice, once = suite.outcomes
    assert twice.outcome == "passed", twice.failures
    assert once.failures[0].startswith("the program asked q2 'Ship it?' and the case gives")


def test_the_id_answers_before_the_text_and_both_count_as_asked() -> None:
    question = Question(id="q1", step="3", text="Ship it?", options=("yes", "no"))
    answers = CaseAnswers({"Ship it?": "no", "q1": "yes", "Other?": "x"})
    assert answers.for_question(question) == ("yes", "test")
    assert answers.unused() == ["Other?"]
    timed = Question(id="q2", step="4", text="Now?", default="later", timeout=60.0)
    assert CaseAnswers({}).for_question(timed) == ("later", "timeout")
    assert CaseAnswers({}).for_question(question) is None
