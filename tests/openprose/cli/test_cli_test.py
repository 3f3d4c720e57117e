"""`prose test` end to end in a project of its own: recording cassettes, replaying them,
a changed prompt failing with a diff, `--update` recording only what changed, reports."""

from __future__ import annotations

import json
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

Result = tuple[int, str, str]

GREET = """\
input name: "who to greet"

agent writer:
  model: sonnet
  prompt: "You write greetings"

let greeting = session: writer
  prompt: "Say hello to {name}"

output card = session "Put the greeting on a card"
  context: greeting
"""

GREET_TESTS = """\
[[case]]
name = "greets Ada"
inputs = { name = "Ada" }
expect = [
  { of = "binding.greeting", equals = "Hello, Ada!" },
  { of = "output.card", contains = "Ada" },
  { of = "output.card", judged = "the card names the person" },
  { of = "sessions", equals = 2 },
]

[[case]]
name = "a card for Bob"
inputs = { name = "Bob" }
expect = [{ of = "output.card", regex = "^A card" }]
"""

OTHER = 'session "Count to three"\n'
OTHER_TESTS = """\
[[case]]
name = "counts"
expect = [{ of = "result", equals = "1, 2, 3" }, { of = "tool_calls", equals = 0 }]
"""

RULES = """\
rules:
  - system: evaluator
    match: "names the person"
    answer: '{"verdict": true, "reason": "it names Ada"}'
  - system: evaluator
    answer: '{"verdict": false, "reason": "it names no one"}'
  - match: "^Say (hello|hi) to"
    answer: "Hello, Ada!"
  - match: "card"
    answer: "A card: Hello, Ada!"
  - match: "Count"
    answer: "1, 2, 3"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "scratch").mkdir()  # the cases' temporary folders
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    (tmp_path / "prose.toml").write_text("")
    (tmp_path / "greet.prose").write_text(GREET)
    (tmp_path / "greet.test.toml").write_text(GREET_TESTS)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "other.prose").write_text(OTHER)
    (tmp_path / "more" / "other.test.toml").write_text(OTHER_TESTS)
    (tmp_path / "rules.yaml").write_text(RULES)
    return tmp_path


RECORD = ("test", "--record", "--provider", "scripted:rules.yaml")


def test_without_cassettes_each_case_says_how_to_record_it(
    project: Path, prose: Callable[..., Result]
) -> None:
    code, out, _ = prose("test")
    assert code == 1
    assert "greet.test.toml EE" in out
    assert (
        "no cassette cassettes/greet/greets-ada.jsonl: record it with `prose test --record`" in out
    )
    assert out.rstrip().splitlines()[-1].startswith("=") and "3 errors in" in out


def test_record_then_replay_passes_and_the_judgment_is_in_the_cassette(
    project: Path, prose: Callable[..., Result]
) -> None:
    code, out, _ = prose(*RECORD, "-v")
    assert code == 0, out
    assert "greet.test.toml::greets Ada PASSED (cassette recorded)" in out
    assert "3 passed, 3 cassette(s) recorded in" in out
    cassette = project / "cassettes" / "greet" / "greets-ada.jsonl"
    systems = [json.loads(line)["request"]["system"] for line in cassette.read_text().splitlines()]
    assert len(systems) == 3 and "evaluator" in systems[2]  # two sessions, then the judgment
    (project / "rules.yaml").write_text("rules: []\n")  # no live answers left: replay only
    code, out, _ = prose("test")
    assert code == 0, out
    assert out.splitlines()[:2] == ["greet.test.toml ..", "more/other.test.toml ."]
    assert "3 passed in" in out


def test_a_failing_judged_expectation_is_recorded_and_fails_the_same_on_replay(
    project: Path, prose: Callable[..., Result]
) -> None:
    (project / "greet.test.toml").write_text(
        GREET_TESTS.replace("the card names the person", "the card is in French")
    )
    for command in (RECORD, ("test",)):
        code, out, _ = prose(*command, "-k", "Ada")
        assert code == 1
        assert (
            "greet.test.toml:7: output.card: the evaluator judged **the card is in French** "
            "false: it names no one; the value: 'A card: Hello, Ada!'"
        ) in out


def test_a_changed_prompt_fails_with_a_diff_and_update_records_only_that_program(
    project: Path, prose: Callable[..., Result]
) -> None:
    assert prose(*RECORD)[0] == 0
    other = project / "more" / "cassettes" / "other" / "counts.jsonl"
    before = other.stat().st_mtime_ns, other.read_bytes()
    (project / "greet.prose").write_text(GREET.replace("Say hello to", "Say hi to"))
    code, out, _ = prose("test", "-q")
    assert code == 1
    assert "2 failed, 1 passed" in out
    assert "the cassette no longer matches the program (a request changed)" in out
    assert "-user: Say hello to Ada\n+user: Say hi to Ada" in out
    assert "-user: Say hello to Bob\n+user: Say hi to Bob" in out
    code, out, _ = prose("test", "--update", "--provider", "scripted:rules.yaml", "-v")
    assert code == 0, out
    assert "greet.test.toml::greets Ada PASSED (cassette recorded)" in out
    assert "more/other.test.toml::counts PASSED\n" in out
    assert (other.stat().st_mtime_ns, other.read_bytes()) == before
    assert prose("test")[0] == 0


def test_a_removed_session_leaves_answers_unasked_and_fails(
    project: Path, prose: Callable[..., Result]
) -> None:
    assert prose(*RECORD)[0] == 0
    (project / "more" / "other.prose").write_text('let x = "1, 2, 3"\n')
    code, out, _ = prose("test", "more")
    assert code == 1
    assert "the run asked for 1 answer(s) fewer than the cassette holds" in out


def test_reports_junit_xml_and_json(project: Path, prose: Callable[..., Result]) -> None:
    assert prose(*RECORD)[0] == 0
    (project / "greet.test.toml").write_text(GREET_TESTS.replace("^A card", "^No card"))
    code, out, _ = prose("test", "--junit-xml", "out/junit.xml", "--json", "report.json")
    assert code == 1
    suite = ET.parse(project / "out" / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "0")
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert [(c.get("classname"), c.get("name")) for c in failed] == [
        ("greet.test.toml", "a card for Bob")
    ]
    report = json.loads((project / "report.json").read_text())
    assert report["summary"] == {
        "passed": 2,
        "failed": 1,
        "errors": 0,
        "deselected": 0,
        "seconds": report["summary"]["seconds"],
    }
    bob = next(c for c in report["cases"] if c["name"] == "a card for Bob")
    assert bob["failures"] == [
        "greet.test.toml:14: output.card: expected a match for /^No card/, got 'A card: Hello, Ada!'"
    ]
    code, out, _ = prose("test", "--json", "-", "-k", "counts")
    assert code == 0
    assert json.loads(out)["summary"]["deselected"] == 2


def test_live_and_scripted_cases_need_no_cassette(
    project: Path, prose: Callable[..., Result]
) -> None:
    (project / "more" / "other.test.toml").write_text(
        OTHER_TESTS
        + '\n[[case]]\nname = "live"\nlive = true\nexpect = [{ of = "result", contains = "3" }]\n'
        + '\n[[case]]\nname = "scripted"\nrules = [{ match = "Count", answer = "one" }]\n'
        + 'expect = [{ of = "result", equals = "one" }]\n'
    )
    code, out, _ = prose(
        "test", "more", "-k", "live or scripted", "--provider", "scripted:rules.yaml"
    )
    assert code == 0, out
    assert "2 passed, 1 deselected" in out
    assert not (project / "more" / "cassettes").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("test", "nowhere"), "prose test: nowhere: no such file or folder"),
        (("test", "greet.prose"), "prose test: greet.prose: not a test file"),
        (("test", "-k", "greet and"), "prose test: -k 'greet and': the expression ends too soon"),
        (("test", "-k", "nothing-like-this"), "prose test: -k 'nothing-like-this' selects no case"),
        (("test", "--jobs", "0"), "--jobs: must be a whole number of at least 1, got '0'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    project: Path, prose: Callable[..., Result], args: tuple[str, ...], message: str
) -> None:
    code, _, err = prose(*args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_a_bad_test_file_exits_2_naming_its_line(
    project: Path, prose: Callable[..., Result]
) -> None:
    (project / "greet.test.toml").write_text(
        '[[case]]\nname = "a"\nexpect = [{ of = "result", equal = "x" }]\n'
    )
    code, out, err = prose("test")
    assert (code, out) == (2, "")
    assert err == (
        "prose test: greet.test.toml:3: unknown key `equal` in case 'a', expect 1 "
        "(did you mean `equals`?)\n"
    )


def test_no_test_files_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prose: Callable[..., Result]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = prose("test")
    assert code == 2
    assert err == "prose test: no test files (NAME.test.toml) in this project\n"


def test_a_failed_case_keeps_its_run_and_passed_ones_leave_nothing(
    project: Path, prose: Callable[..., Result]
) -> None:
    assert prose(*RECORD)[0] == 0
    assert list((project / "scratch").iterdir()) == []
    (project / "greet.test.toml").write_text(GREET_TESTS.replace("^A card", "^No card"))
    code, out, _ = prose("test")
    assert code == 1
    (kept,) = (project / "scratch").iterdir()
    (run,) = (kept / "work" / ".prose" / "runs").iterdir()
    assert f"the run is kept: prose show {run}\n" in out
    code, shown, _ = prose("show", run)
    assert code == 0 and "A card: Hello, Ada!" in shown


WRITER = """\
agent scribe:
  model: sonnet
  permissions:
    write: prompt

session: scribe
  prompt: "Write the note"
"""

WRITER_RULES = """\
rules:
  - match: "Write the note"
    turns:
      - tool_calls: [{name: write_file, arguments: {path: notes/n.md, content: "hi"}}]
      - text: "written"
"""

WRITER_TESTS = """\
[[case]]
name = "asks first"
scripted = "writer-rules.yaml"
expect = [{ of = "status", equals = "waiting" }, { of = "permissions", equals = [] }]

[[case]]
name = "approved"
scripted = "writer-rules.yaml"
approve = true
files = { "notes/README.md" = "notes go here" }
expect = [
  { of = "permissions", equals = ["write notes/n.md"] },
  { of = "tool_calls", equals = 1 },
  { of = "result", equals = "written" },
]
"""


def test_scripted_files_and_approve(project: Path, prose: Callable[..., Result]) -> None:
    (project / "writer.prose").write_text(WRITER)
    (project / "writer-rules.yaml").write_text(WRITER_RULES)
    (project / "writer.test.toml").write_text(WRITER_TESTS)
    code, out, _ = prose("test", "writer.test.toml", "-v")
    assert code == 0, out
    assert "writer.test.toml::asks first PASSED" in out
    assert "writer.test.toml::approved PASSED" in out
    assert not (project / "notes").exists()  # the case wrote in its own folder


def test_a_case_that_cannot_run_is_an_error_in_junit(
    project: Path, prose: Callable[..., Result]
) -> None:
    code, _, _ = prose("test", "more", "--junit-xml", "junit.xml")
    assert code == 1
    (case,) = ET.parse(project / "junit.xml").getroot().iter("testcase")
    error = case.find("error")
    assert error is not None
    assert error.get("message") == (
        "no cassette more/cassettes/other/counts.jsonl: record it with `prose test --record`"
    )


def test_a_cassette_that_cannot_be_saved_is_an_error_of_its_case(
    project: Path, prose: Callable[..., Result]
) -> None:
    (project / "more" / "cassettes").write_text("a file where the folder should be")
    code, out, err = prose(*RECORD, "more")
    assert code == 1
    assert "more/other.test.toml E" in out
    assert "the case could not run: " in out and "cassettes" in out
    assert "Traceback" not in out + err
