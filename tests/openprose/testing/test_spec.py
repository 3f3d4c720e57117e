"""Test files: what a valid one gives, and each mistake named with its file and line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from openprose.testing.spec import Expectation, TestFileError, load_test_file, slug


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "hello.prose").write_text('session "Hello world"\n')
    return tmp_path


def _write(folder: Path, text: str, name: str = "hello.test.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _problem(folder: Path, text: str) -> str:
    with pytest.raises(TestFileError) as caught:
        load_test_file(_write(folder, text))
    return str(caught.value)


def test_a_file_gives_its_cases_with_defaults(folder: Path) -> None:
    path = _write(
        folder,
        '[[case]]\nname = "greets the world"\ninputs = { topic = "tea" }\n'
        'expect = [\n  { of = "result", contains = "Hello" },\n'
        '  { of = "sessions", at_least = 1, at_most = 2 },\n]\n\n'
        '[[case]]\nname = "scripted"\nrules = [{ match = "Hello", answer = "Hi" }]\n',
    )
    loaded = load_test_file(path)
    assert loaded.program == (folder / "hello.prose").resolve()
    first, second = loaded.cases
    assert first.name == "greets the world" and first.line == 1
    assert first.inputs == {"topic": "tea"}
    assert first.source == "cassette"
    assert first.cassette == folder / "cassettes" / "hello" / "greets-the-world.jsonl"
    assert first.expect == (
        Expectation("result", (("contains", "Hello"),), 5),
        Expectation("sessions", (("at_least", 1), ("at_most", 2)), 6),
    )
    assert second.source == "scripted" and second.line == 9
    assert second.rules == ({"match": "Hello", "answer": "Hi"},)


def test_program_names_another_file_and_live_cases_say_so(folder: Path) -> None:
    loaded = load_test_file(
        _write(
            folder, 'program = "hello.prose"\n[[case]]\nname = "a"\nlive = true\n', "x.test.toml"
        )
    )
    assert loaded.program.name == "hello.prose" and loaded.cases[0].source == "live"


def test_slug_makes_a_file_name() -> None:
    assert slug("Greets, the World!") == "greets-the-world"
    assert slug("???") == "case"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[case]\nname = "a"\n', "hello.test.toml:1:7: not valid TOML"),
        (
            '[[case]]\nname = "a"\nexpcet = []\n',
            "hello.test.toml:3: unknown key `expcet` in case 'a' (did you mean `expect`?)",
        ),
        ("", "hello.test.toml:1: no cases: add a `[[case]]` table"),
        ("[[case]]\ninputs = {}\n", "hello.test.toml:1: a case needs a `name`"),
        (
            '[[case]]\nname = "a"\n\n[[case]]\nname = "a"\n',
            "hello.test.toml:4: two cases are named 'a'",
        ),
        (
            '[[case]]\nname = "a"\nexpect = [\n  { of = "result", equals = "x" },\n  { of = "resutl", equals = "x" },\n]\n',
            "hello.test.toml:5: case 'a', expect 2: `of` must be one of result, status",
        ),
        (
            '[[case]]\nname = "a"\nexpect = [{ of = "result" }]\n',
            "hello.test.toml:3: case 'a', expect 1: say what to check",
        ),
        (
            '[[case]]\nname = "a"\nexpect = [{ of = "result", regex = "(" }]\n',
            "case 'a', expect 1: `regex` is not a valid regular expression",
        ),
        (
            '[[case]]\nname = "a"\nexpect = [{ of = "cost", at_most = "cheap" }]\n',
            "case 'a', expect 1: `at_most` takes a number",
        ),
        (
            '[[case]]\nname = "a"\nexpect = [{ of = "result", schema = "x" }]\n',
            "`schema` takes a JSON Schema (a table)",
        ),
        (
            '[[case]]\nname = "a"\nexpect = [{ of = "result", contians = "x" }]\n',
            "unknown key `contians` in case 'a', expect 1 (did you mean `contains`?)",
        ),
        (
            '[[case]]\nname = "a"\nlive = true\nrules = [{ match = "x", answer = "y" }]\n',
            "hello.test.toml:1: case 'a': answers come from one place; it gives rules and live",
        ),
        (
            '[[case]]\nname = "a"\nfiles = { "../escape.txt" = "x" }\n',
            "case 'a': file '../escape.txt' must be a path inside the case's folder",
        ),
        ('program = "missing.prose"\n[[case]]\nname = "a"\n', "hello.test.toml:1: the program"),
        (
            '[[case]]\nname = "a"\nlive = "yes"\n',
            "hello.test.toml:3: case 'a': `live` must be true or false",
        ),
    ],
)
def test_a_bad_file_is_one_line_naming_where(folder: Path, text: str, problem: str) -> None:
    found = _problem(folder, text)
    assert problem in found
    assert "\n" not in found
    assert found.startswith(str(folder / "hello.test.toml") + ":")


def test_a_test_file_without_its_program_says_how_to_name_one(tmp_path: Path) -> None:
    path = _write(tmp_path, '[[case]]\nname = "a"\n', "lonely.test.toml")
    with pytest.raises(TestFileError, match=r"lonely\.prose does not exist \(say which with"):
        load_test_file(path)


def test_a_file_that_is_not_utf8_is_named(folder: Path) -> None:
    path = folder / "hello.test.toml"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(TestFileError, match=r"hello\.test\.toml:1: not UTF-8"):
        load_test_file(path)


FRAGMENTS = [
    "[[case]]",
    'name = "a"',
    'name = "b"',
    "name = 3",
    'program = "hello.prose"',
    'program = ""',
    'evaluator = "haiku"',
    "evaluator = 1",
    'inputs = { topic = "tea" }',
    "inputs = 1",
    'files = { "a.txt" = "x" }',
    'files = { "/etc/x" = "x" }',
    "files = { a = 1 }",
    "live = true",
    "live = 1",
    "approve = true",
    'cassette = "c.jsonl"',
    "cassette = 1",
    'scripted = "r.yaml"',
    'rules = [{ match = "x", answer = "y" }]',
    "rules = [1]",
    'expect = [{ of = "result", equals = "x" }]',
    'expect = [{ of = "sessions", at_most = "x" }]',
    'expect = [{ of = "output.", equals = 1 }]',
    'expect = [{ of = "result", regex = "[" }]',
    'expect = [{ of = "result", schema = { type = "string" } }]',
    "expect = [1]",
    'expect = { of = "result" }',
    "[case.files]",
    '"x.md" = "text"',
    "[other]",
    "case = 1",
    "= broken",
    '"unterminated',
    "",
]


@given(lines=st.lists(st.sampled_from(FRAGMENTS), max_size=12))
@example(lines=["case = 1"])  # `case` not a list of tables
@example(lines=["[[case]]", 'name = "a"', "[case.files]", '"x.md" = "text"'])
def test_any_file_loads_or_is_one_line_naming_its_place(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "hello.prose").write_text('session "Hello world"\n')
    path = folder / "hello.test.toml"
    path.write_text("\n".join(lines) + "\n")
    try:
        loaded = load_test_file(path)
    except TestFileError as error:
        text = str(error)
        assert "\n" not in text
        assert re.match(re.escape(str(path)) + r":\d+(:\d+)?: ", text), text
    else:
        assert loaded.cases and all(c.name for c in loaded.cases)


def test_answers_are_read_and_a_wrong_one_is_named_with_its_line(folder: Path) -> None:
    loaded = load_test_file(
        _write(
            folder,
            '[[case]]\nname = "a"\nanswers = { q1 = "yes", "Ship it?" = ["no", "2"] }\n',
        )
    )
    assert loaded.cases[0].answers == {"q1": "yes", "Ship it?": ("no", "2")}
    assert _problem(folder, '[[case]]\nname = "a"\n\nanswers = ["yes"]\n').endswith(
        "/hello.test.toml:4: case 'a': `answers` is a table like "
        '{ "Ship it?" = "yes" } (the question\'s text or id)'
    )
    problem = _problem(folder, '[[case]]\nname = "a"\n[case.answers]\nq1 = 2\n')
    assert (
        "/hello.test.toml:4: case 'a': the answer to 'q1' must be text, or a non-empty" in problem
    )
