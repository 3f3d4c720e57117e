"""`ask "question"` through the front end: parsed (only before a string: a variable named `ask`
reads as before), printed and compiled back to the same tree, checked (E190-E192,
W190-W192, names in its question and properties resolved) and indexed for the editor."""

from __future__ import annotations

import pytest

from openprose import nodes as n
from openprose.asking import duration_seconds, timeout_of
from openprose.compiler import compile_program
from openprose.formatter import format_source
from openprose.lsp.index import build_index
from openprose.parser import parse_text
from openprose.printer import print_program
from tests.openprose.checker.conftest import Check

ASK = """\
input change: "The change"
let plan = ask "How should {change} ship?" timeout: "30m"
  default: "canary"
  options: ["at once", "canary"]
session "Ship {change}: {plan}"
"""


def _ask(source: str) -> n.Ask:
    program = parse_text(source).program
    found = [node for node in n.walk(program) if isinstance(node, n.Ask)]
    assert len(found) == 1
    return found[0]


def test_the_question_and_its_properties_inline_or_below() -> None:
    ask = _ask(ASK)
    assert ask.question.value == "How should {change} ship?"
    assert [p.name.id for p in ask.properties] == ["timeout", "default", "options"]


def test_ask_stands_alone_as_a_statement() -> None:
    result = parse_text('ask "Ready to go on?"\n')
    assert result.diagnostics == ()
    assert isinstance(result.program.body[0], n.Ask)


def test_a_variable_named_ask_is_still_a_variable() -> None:
    source = 'let ask = session "Ask around"\nsession "Use {ask}"\nlet x = ask\n'
    result = parse_text(source)
    assert result.diagnostics == ()
    assert not any(isinstance(node, n.Ask) for node in n.walk(result.program))


def test_printed_and_compiled_it_parses_back_the_same() -> None:
    program = parse_text(ASK).program
    printed = print_program(program)
    assert parse_text(printed).program == program
    compiled = compile_program(program)
    # canonical order: options, default, timeout, each on its own line
    assert '  options: ["at once", "canary"]\n  default: "canary"\n  timeout: "30m"\n' in compiled
    assert compile_program(parse_text(compiled).program) == compiled


def test_fmt_keeps_a_comment_beside_an_ask() -> None:
    source = '# the person decides\nlet go = ask "Go?" options: ["yes", "no"]\n'
    formatted = format_source(parse_text(source))
    assert "# the person decides" in formatted
    assert 'let go = ask "Go?"\n  options: ["yes", "no"]\n' in formatted


def test_a_well_formed_ask_checks_clean(checked: Check) -> None:
    assert checked(ASK) == []


@pytest.mark.parametrize(
    ("source", "codes"),
    [
        ('let a = ask "Go?" options: []\n', ["E190"]),
        ('let a = ask "Go?" options: ["yes", 2]\n', ["E190"]),
        ('let a = ask "Go?" options: ["yes", "no"] default: "Yes"\n', ["E191"]),
        ('let a = ask "Go?" timeout: 0\n', ["E192"]),
        ('let a = ask "Go?" timeout: "5 minutes"\n', ["E192"]),
        ('let a = ask "Go?" timeout: 10 timeout: 20\n', ["E009"]),
        ('let a = ask "Go?" defualt: "no"\n', ["W190"]),
        ('let a = ask "  "\n', ["W191"]),
        ('let a = ask "Go?" options: ["y", "n", "y"]\n', ["W192"]),
        ('let a = ask "Go {who}?"\n', ["E141"]),  # names in the question resolve
        ('let a = ask "Go?" options: choices\n', ["E140"]),
    ],
)
def test_diagnostics(checked: Check, source: str, codes: list[str]) -> None:
    assert [d.code for d in checked(source)] == codes


def test_a_misspelled_default_gets_the_nearest_option_as_a_fix(checked: Check) -> None:
    (found,) = checked('let a = ask "Go?" options: ["yes", "no"] default: "yess"\n')
    assert found.code == "E191"
    assert found.fix is not None and found.fix.edits[0].text == '"yes"'


def test_options_from_a_variable_are_checked_at_run_time(checked: Check) -> None:
    source = 'let choices = ["a", "b"]\nlet x = ask "Pick" options: choices default: "c"\n'
    assert checked(source) == []


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("1.5h", 5400.0), ("1d", 86400.0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert duration_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "-5m", "ten minutes", "5 minutes", "5y"])
def test_not_durations(text: str) -> None:
    assert duration_seconds(text) is None


def test_a_timeout_from_a_name_is_not_a_timeout() -> None:
    ask = _ask('let t = 5\nlet a = ask "Go?" timeout: t\n')
    assert timeout_of(ask.properties[0].value) is None


def test_the_editor_index_sees_the_names_an_ask_reads() -> None:
    index = build_index(parse_text(ASK).program)
    read = {r.name for r in index.references}
    assert "change" in read
    assert "plan" in {d.name for d in index.definitions}
