"""Property-based tests: no input makes the front end raise; every diagnostic is well formed.

Inputs are random token soups, random text, and mutations (deleted, duplicated, swapped and
re-indented lines; inserted hostile characters) of the reference examples.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprose import nodes as n
from openprose.codes import CODES
from openprose.parser import ParseResult, decode_source, parse_text
from openprose.source import SourceFile

EXAMPLES = [
    p.read_text(encoding="utf-8")
    for p in sorted((Path(__file__).parent / "conformance" / "reference_examples").glob("*.prose"))
]

FRAGMENTS = [
    "session", "resume", "agent", "let", "const", "output", "input", "use", "do", "block",
    "parallel", "for", "in", "repeat", "loop", "until", "while", "as", "try", "catch",
    "finally", "throw", "choice", "option", "if", "elif", "else", "map", "filter", "reduce",
    "pmap", "x", "review-pipeline", "on-fail", "3", "-1", "2.5", '"s"', '"a {b} \\{c}"',
    '"bad \\q"', '"open', '"""\n', '"""', "**c**", "**", "***\nc\n***", "***", ":", "=", ",",
    "(", ")", "[", "]", "{", "}", "|", ".", "->", "#", "# note", "\n", "\n  ", "\n    ",
    "\r\n", "\t", " ", "  ", "\x00", "é", "\ufeff",
]  # fmt: skip

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_result(text: str, result: ParseResult) -> None:
    assert isinstance(result.program, n.Program)
    source = SourceFile.from_text(text)
    size = len(text)
    for diagnostic in result.diagnostics:
        assert diagnostic.code in CODES
        assert diagnostic.severity == CODES[diagnostic.code].severity
        span = diagnostic.span
        assert 0 <= span.start <= span.end <= size
        assert source.position(span.start) == (span.line, span.column)
        assert source.position(span.end) == (span.end_line, span.end_column)
    for stmt in result.program.body:
        assert 0 <= stmt.span.start <= stmt.span.end <= size
        assert source.position(stmt.span.start) == (stmt.span.line, stmt.span.column)


@SETTINGS
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map(" ".join))
def test_token_soup_never_raises(text: str) -> None:
    check_result(text, parse_text(text))


@SETTINGS
@given(st.text(max_size=300))
def test_random_text_never_raises(text: str) -> None:
    check_result(text, parse_text(text))


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_decode_or_diagnose(data: bytes) -> None:
    source, found = decode_source(data)
    if source is None:
        assert [d.code for d in found] == ["E100"]
    else:
        check_result(source.text, parse_text(source.text))


@st.composite
def mutated_example(draw: st.DrawFn) -> str:
    lines = draw(st.sampled_from(EXAMPLES)).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        index = draw(st.integers(0, max(0, len(lines) - 1)))
        action = draw(
            st.sampled_from(["delete", "duplicate", "indent", "dedent", "insert", "swap", "cut"])
        )
        line = lines[index] if lines else ""
        if action == "delete" and lines:
            del lines[index]
        elif action == "duplicate":
            lines.insert(index, line)
        elif action == "indent":
            lines[index : index + 1] = ["  " * draw(st.integers(1, 3)) + line]
        elif action == "dedent":
            lines[index : index + 1] = [line.lstrip()]
        elif action == "insert":
            at = draw(st.integers(0, len(line)))
            lines[index : index + 1] = [line[:at] + draw(st.sampled_from(FRAGMENTS)) + line[at:]]
        elif action == "swap" and len(lines) > 1:
            other = draw(st.integers(0, len(lines) - 1))
            lines[index], lines[other] = lines[other], lines[index]
        elif action == "cut":
            at = draw(st.integers(0, len(line)))
            lines[index : index + 1] = [line[:at]]
    return "\n".join(lines)


@SETTINGS
@given(mutated_example())
def test_mutated_reference_examples_never_raise(text: str) -> None:
    check_result(text, parse_text(text))
    check_result(text.replace("\n", "\r\n"), parse_text(text.replace("\n", "\r\n")))


CLEAN_EXAMPLES = [text for text in EXAMPLES if not parse_text(text).diagnostics]
BROKEN_LINES = [
    "let = 1",
    'session "unterminated',
    'option "A":',  # an orphan clause (an `else:` may follow an `if` in `before`)
    "x y z",
    "agent:",
    "loop until **never closed:",
    "let x = [a, b",
    "let x = items | sort:",
    '\tsession "tab"',
    'session @ "x"',
]


@SETTINGS
@given(
    st.sampled_from(CLEAN_EXAMPLES),
    st.sampled_from(BROKEN_LINES),
    st.sampled_from(CLEAN_EXAMPLES),
)
def test_an_error_stays_in_its_statement(before: str, broken: str, after: str) -> None:
    text = before.rstrip("\n") + "\n" + broken + "\n" + after
    broken_line = before.rstrip("\n").count("\n") + 2
    result = parse_text(text)
    assert result.diagnostics
    assert {d.line for d in result.diagnostics} == {broken_line}
    tail = parse_text(after).program.body
    assert result.program.body[len(result.program.body) - len(tail) :] == tail
