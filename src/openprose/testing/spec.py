"""Test files: `NAME.test.toml` beside `NAME.prose`, one file holding many cases.

    program = "hello.prose"              # optional: NAME.test.toml tests NAME.prose

    [[case]]
    name = "greets"
    inputs = { topic = "tea" }           # the program's inputs
    # answers: a cassette (the default, cassettes/NAME/SLUG.jsonl beside this file),
    # `rules = [...]` or `scripted = "rules.yaml"` (the scripted provider), or `live = true`
    files = { "src/app.py" = "..." }     # the case's working folder holds these
    answers = { "Ship it?" = "yes" }     # a person's answers to its `ask` questions
    expect = [
      { of = "result", contains = "Hello" },
      { of = "sessions", equals = 1 },
    ]

TOML, not YAML: it is the format of prose.toml, the standard library reads it, and it has no
implicit typing (YAML reads an answer `no` as false). A problem is a `TestFileError` whose
message starts `file:line:`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CHECKS",
    "SUBJECTS",
    "Case",
    "Expectation",
    "TestFile",
    "TestFileError",
    "load_test_file",
    "slug",
]

SUFFIX = ".test.toml"
FILE_KEYS = ("program", "evaluator", "case")
CASE_KEYS = (
    "name",
    "inputs",
    "files",
    "cassette",
    "rules",
    "scripted",
    "live",
    "approve",
    "answers",
    "evaluator",
    "expect",
)
# What an expectation looks at (`of`): a fixed name, or `output.NAME` / `binding.NAME`.
SUBJECTS = (
    "result",
    "status",
    "error",
    "sessions",
    "judgments",
    "tool_calls",
    "tokens",
    "cost",
    "permissions",
    "questions",
)
NAMED_SUBJECTS = ("output", "binding")
CHECKS = ("equals", "contains", "regex", "schema", "judged", "at_least", "at_most")
FILE_LIMIT = 16 * 1024 * 1024  # bytes of a test file


class TestFileError(Exception):
    """A test file that cannot be used; the message starts with `file:line:`."""

    __test__ = False  # not a pytest test class, whatever its name says


@dataclass(frozen=True, slots=True)
class Expectation:
    of: str  # a subject: `result`, `output.summary`, `sessions`...
    checks: tuple[tuple[str, Any], ...]  # (check kind, expected), in the file's order
    line: int


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    line: int
    inputs: Mapping[str, Any] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    cassette: Path | None = None  # answers recorded (the default)
    rules: tuple[Mapping[str, Any], ...] = ()  # inline scripted rules
    scripted: Path | None = None  # a scripted provider's rules file
    live: bool = False  # the configured (or `--provider`) provider, every run
    approve: bool = False  # approve `prompt` permissions (else the run stops waiting)
    # A person's answers to the program's `ask` questions, keyed by the question's text (as
    # asked, interpolated) or id (`q1`): one answer for every asking, or a list, in order.
    answers: Mapping[str, str | tuple[str, ...]] = field(default_factory=dict)
    evaluator: str | None = None
    expect: tuple[Expectation, ...] = ()

    @property
    def source(self) -> str:
        """`cassette`, `scripted` or `live`: where the model's answers come from."""
        if self.live:
            return "live"
        if self.rules or self.scripted is not None:
            return "scripted"
        return "cassette"


@dataclass(frozen=True, slots=True)
class TestFile:
    path: Path
    program: Path
    cases: tuple[Case, ...]

    __test__ = False


def slug(name: str) -> str:
    """A case name as a file name: `greets the world` -> `greets-the-world`."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "case"


def shown_path(path: Path) -> str:
    """`path` relative to the working folder when it is below it, as pytest names files."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def program_for(path: Path) -> Path:
    """The program a test file tests when it does not say: `hello.test.toml` -> `hello.prose`."""
    return path.with_name(path.name.removesuffix(SUFFIX) + ".prose")


def load_test_file(path: Path) -> TestFile:
    from openprose.files import FileProblem, read_limited

    try:
        text = read_limited(path, FILE_LIMIT).decode("utf-8")
    except FileProblem as problem:
        raise TestFileError(f"{path}: cannot read the test file: {problem}") from None
    except UnicodeDecodeError as exc:
        raise TestFileError(f"{path}:1: not UTF-8 (byte {exc.start})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TestFileError(_toml_problem(path, exc)) from None
    return _Reader(path, text).test_file(data)


def _toml_problem(path: Path, exc: tomllib.TOMLDecodeError) -> str:
    """`file:line:col: problem` from tomllib's `problem (at line L, column C)`."""
    text = str(exc)
    found = re.search(r"\(at line (\d+), column (\d+)\)$", text)
    if found is None:
        return f"{path}:1: not valid TOML: {text}"
    problem = text[: found.start()].strip()
    return f"{path}:{found.group(1)}:{found.group(2)}: not valid TOML: {problem}"


class _Reader:
    """Turns the parsed TOML into cases, naming the line of each problem."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        # The line of each `[[case]]` header, so a problem in case N names its line.
        self.case_lines = [
            number
            for number, line in enumerate(self.lines, 1)
            if re.match(r"\s*\[\[\s*case\s*\]\]", line)
        ]

    def fail(self, line: int, message: str) -> TestFileError:
        return TestFileError(f"{shown_path(self.path)}:{line}: {message}")

    def line_of(self, text: str, start: int) -> int:
        """The first line at or after `start` holding `text` (else `start`)."""
        for number in range(max(start, 1), len(self.lines) + 1):
            if text in self.lines[number - 1]:
                return number
        return start

    def test_file(self, data: dict[str, Any]) -> TestFile:
        self.unknown(data, FILE_KEYS, 1, "the test file")
        program = data.get("program")
        if program is None:
            program_path = program_for(self.path)
        elif isinstance(program, str) and program:
            program_path = self.path.parent / program
        else:
            raise self.fail(self.line_of("program", 1), "`program` must be a file name")
        if not program_path.is_file():
            raise self.fail(
                self.line_of("program", 1) if program is not None else 1,
                f"the program {program_path} does not exist"
                + ("" if program is not None else ' (say which with `program = "..."`)'),
            )
        raw_cases = data.get("case", [])
        if not isinstance(raw_cases, list) or not raw_cases:
            raise self.fail(1, "no cases: add a `[[case]]` table with a `name`")
        evaluator = data.get("evaluator")
        cases: list[Case] = []
        for index, raw in enumerate(raw_cases):
            line = self.case_lines[index] if index < len(self.case_lines) else 1
            case = self.case(raw, line, evaluator)
            if any(c.name == case.name for c in cases):
                raise self.fail(line, f"two cases are named {case.name!r}")
            cases.append(case)
        return TestFile(self.path, program_path.resolve(), tuple(cases))

    def unknown(
        self, table: Mapping[str, Any], known: tuple[str, ...], line: int, what: str
    ) -> None:
        from cliconventions import did_you_mean

        for key in table:
            if key not in known:
                guess = did_you_mean(key, known)
                hint = f" (did you mean `{guess}`?)" if guess else ""
                raise self.fail(self.line_of(key, line), f"unknown key `{key}` in {what}{hint}")

    def case(self, raw: object, line: int, evaluator: object) -> Case:
        if not isinstance(raw, dict):
            raise self.fail(line, "a case must be a table")
        name = raw.get("name")
        if not isinstance(name, str) or not name.strip():
            raise self.fail(line, "a case needs a `name` (text)")
        what = f"case {name!r}"
        self.unknown(raw, CASE_KEYS, line, what)
        inputs = raw.get("inputs", {})
        files = raw.get("files", {})
        if not isinstance(inputs, dict):
            raise self.fail(self.line_of("inputs", line), f"{what}: `inputs` must be a table")
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise self.fail(
                self.line_of("files", line), f"{what}: `files` must map paths to their text"
            )
        for name_of_file in files:
            relative = Path(name_of_file)
            if relative.is_absolute() or ".." in relative.parts:
                raise self.fail(
                    self.line_of(name_of_file, line),
                    f"{what}: file {name_of_file!r} must be a path inside the case's folder",
                )
        rules = raw.get("rules", [])
        if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
            raise self.fail(
                self.line_of("rules", line), f"{what}: `rules` must be a list of tables"
            )
        sources = [k for k in ("cassette", "rules", "scripted", "live") if raw.get(k)]
        if len(sources) > 1:
            raise self.fail(
                line, f"{what}: answers come from one place; it gives {' and '.join(sources)}"
            )
        live = raw.get("live", False)
        approve = raw.get("approve", False)
        for key, value in (("live", live), ("approve", approve)):
            if not isinstance(value, bool):
                raise self.fail(self.line_of(key, line), f"{what}: `{key}` must be true or false")
        answers = self.answers(raw.get("answers", {}), self.line_of("answers", line), what)
        case_evaluator = raw.get("evaluator", evaluator)
        if case_evaluator is not None and not isinstance(case_evaluator, str):
            raise self.fail(self.line_of("evaluator", line), "`evaluator` must be a model alias")
        expect = raw.get("expect", [])
        if not isinstance(expect, list):
            raise self.fail(self.line_of("expect", line), f"{what}: `expect` must be a list")
        return Case(
            name=name,
            line=line,
            inputs=inputs,
            files=files,
            cassette=self.path_of(raw, "cassette", line, what)
            or self.path.parent
            / "cassettes"
            / self.path.name.removesuffix(SUFFIX)
            / (slug(name) + ".jsonl"),
            rules=tuple(rules),
            scripted=self.path_of(raw, "scripted", line, what),
            live=live,
            approve=approve,
            answers=answers,
            evaluator=case_evaluator,
            expect=tuple(
                self.expectation(
                    item, self.expectation_line(line, number), f"{what}, expect {number}"
                )
                for number, item in enumerate(expect, 1)
            ),
        )

    def answers(self, raw: object, line: int, what: str) -> dict[str, str | tuple[str, ...]]:
        """`{ "QUESTION or ID" = "ANSWER" or ["ANSWER", ...] }`."""
        shape = '`answers` is a table like { "Ship it?" = "yes" } (the question\'s text or id)'
        if not isinstance(raw, dict):
            raise self.fail(line, f"{what}: {shape}")
        answers: dict[str, str | tuple[str, ...]] = {}
        for question, given in raw.items():
            if isinstance(given, str):
                answers[question] = given
            elif given and isinstance(given, list) and all(isinstance(a, str) for a in given):
                answers[question] = tuple(given)
            else:
                raise self.fail(
                    self.line_of(question, line),
                    f"{what}: the answer to {question!r} must be text, or a non-empty list of "
                    "texts (one per asking, in order)",
                )
        return answers

    def expectation_line(self, case_line: int, number: int) -> int:
        """The line of a case's `number`th `of = ...` (its expectation), else the case's."""
        seen = 0
        for index in range(case_line, len(self.lines)):
            text = self.lines[index]
            if re.match(r"\s*\[\[\s*case\s*\]\]", text):
                break
            seen += len(re.findall(r"(?:^|[{,\s])of\s*=", text))
            if seen >= number:
                return index + 1
        return case_line

    def path_of(self, raw: Mapping[str, Any], key: str, line: int, what: str) -> Path | None:
        value = raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(self.line_of(key, line), f"{what}: `{key}` must be a file path")
        return self.path.parent / value

    def expectation(self, raw: object, line: int, what: str) -> Expectation:
        if not isinstance(raw, dict):
            raise self.fail(
                line,
                f'{what}: an expectation is a table like {{ of = "result", contains = "..." }}',
            )
        self.unknown(raw, ("of", *CHECKS), line, what)
        subject = raw.get("of")
        if not isinstance(subject, str) or not _known_subject(subject):
            shown = ", ".join([*SUBJECTS, "output.NAME", "binding.NAME"])
            raise self.fail(line, f"{what}: `of` must be one of {shown}; got {subject!r}")
        checks = tuple((k, v) for k, v in raw.items() if k != "of")
        if not checks:
            raise self.fail(line, f"{what}: say what to check: one of {', '.join(CHECKS)}")
        for kind, value in checks:
            problem = _check_problem(kind, value)
            if problem:
                raise self.fail(self.line_of(kind, line), f"{what}: `{kind}` {problem}")
        return Expectation(subject, checks, line)


def _known_subject(subject: str) -> bool:
    head, dot, name = subject.partition(".")
    if dot:
        return head in NAMED_SUBJECTS and bool(name)
    return subject in SUBJECTS


def _check_problem(kind: str, value: object) -> str | None:
    """Why `value` cannot be what a check of `kind` expects, or None."""
    if kind in ("contains", "judged") and not isinstance(value, str):
        return "takes text"
    if kind == "regex":
        if not isinstance(value, str):
            return "takes a regular expression (text)"
        try:
            re.compile(value)
        except re.error as exc:
            return f"is not a valid regular expression: {exc}"
    if kind == "schema" and not isinstance(value, dict):
        return "takes a JSON Schema (a table)"
    if kind in ("at_least", "at_most") and (
        isinstance(value, bool) or not isinstance(value, int | float)
    ):
        return "takes a number"
    return None
