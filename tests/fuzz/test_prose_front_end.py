"""Fuzz the OpenProse front end, stage by stage, on mutations of the example corpus:
decode → scan → parse → check → format → compile never raise, and what they return is
well formed (diagnostic codes known, spans inside the text, formatting idempotent when it
succeeds)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprose.checker import diagnose
from openprose.codes import CODES
from openprose.compiler import compile_program
from openprose.formatter import format_source
from openprose.parser import decode_source, parse, parse_text
from openprose.scanner import scan
from tests.fuzz.prose_corpus import FUZZ_FRONT_END, PROGRAMS, Counter, mutated

COUNTER = Counter()
PROJECT = Path(tempfile.mkdtemp(prefix="prose-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    COUNTER.report()


@FUZZ_FRONT_END
@given(mutated(PROGRAMS))
def test_prose_scanner_parser_and_checker_never_raise(data: bytes) -> None:
    COUNTER.tick("front_end.scan_parse_check")

    source, problems = decode_source(data, "fuzz.prose")
    if source is None:
        assert problems and all(d.code in CODES for d in problems)
        return
    scanned = scan(source)
    assert all(d.code in CODES for d in scanned.diagnostics)
    parsed = parse(source)
    size = len(source.text)
    for diagnostic in diagnose(parsed, PROJECT):
        assert diagnostic.code in CODES
        assert 0 <= diagnostic.span.start <= diagnostic.span.end <= size


@FUZZ_FRONT_END
@given(mutated(PROGRAMS))
def test_prose_formatter_and_compiler_never_raise(data: bytes) -> None:
    COUNTER.tick("front_end.format_compile")
    text = data.decode("utf-8", "replace")
    parsed = parse_text(text, "fuzz.prose")
    if not parsed.ok:
        return  # the formatter and compiler take programs that parse
    formatted = format_source(parsed)
    again = parse_text(formatted, "fuzz.prose")
    assert again.ok, formatted
    assert format_source(again) == formatted  # canonical layout is a fixed point
    compile_program(parsed.program)


@FUZZ_FRONT_END
@given(mutated(PROGRAMS))
def test_prose_check_fix_never_raises_and_settles(data: bytes) -> None:
    """`prose check --fix --unsafe-fixes` on anything: every fix's edits lie inside the text
    and do not overlap, applying them never raises, and the fixed text has no more syntax
    errors than the original (what `fix_source` promises)."""
    COUNTER.tick("front_end.fix")
    from openprose.fixes import _syntax_errors, fix_source
    from openprose.source import SourceFile

    text = data.decode("utf-8", "replace")
    source = SourceFile.from_text(text, "fuzz.prose")
    before = diagnose(parse(source), PROJECT)
    for diagnostic in before:
        if diagnostic.fix is not None:
            spans = sorted((e.span.start, e.span.end) for e in diagnostic.fix.edits)
            assert all(0 <= a <= b <= len(text) for a, b in spans), diagnostic
            assert all(b <= c for (_, b), (c, _) in pairwise(spans)), diagnostic
    result = fix_source(source, project_dir=PROJECT, unsafe=True)
    assert _syntax_errors(result.remaining) <= _syntax_errors(list(before))


# Lines that start like the habits the parser rewrites (decisions, "Programs as people write
# them (session 14)") and go on with anything: their recoveries must hold for any tail.
_HABIT_HEADS = [
    "input x:", "input x", "input x =", "option", "loop as i", "loop until **a b** as i",
    "do f", "do f(", "let x:", "output x:", "for i in range(", "  prompt:", "  context: (",
    "    read:", "    write:", "return", "  return", "except", "break", "session: a",
    "resume: a", "  retry: 3", "repeat N", "if **a b**:", "  | map:", "  -> session",
]  # fmt: skip
_TAILS = ["", " ", "x", '"s"', "3", "times", ":", ",", "(", ")", "[", "]", "{", "}", "**",
          "*.md", "docs/", "\\", "'", "as", "=", "\n", "\n  ", "\n    x", "#c", "é", "{x}"]  # fmt: skip


@FUZZ_FRONT_END
@given(
    st.lists(
        st.tuples(st.sampled_from(_HABIT_HEADS), st.lists(st.sampled_from(_TAILS), max_size=6)),
        min_size=1,
        max_size=6,
    )
)
def test_habit_lines_never_break_the_front_end(lines: list[tuple[str, list[str]]]) -> None:
    COUNTER.tick("front_end.habits")
    from openprose.fixes import fix_source
    from openprose.source import SourceFile

    prelude = (
        'agent a:\n  model: sonnet\n  permissions:\n    bash: deny\nblock f(p):\n  session "x"\n'
    )
    text = prelude + "\n".join(head + " " + " ".join(tail) for head, tail in lines) + "\n"
    source = SourceFile.from_text(text, "fuzz.prose")
    for diagnostic in diagnose(parse(source), PROJECT):
        assert diagnostic.code in CODES
        assert 0 <= diagnostic.span.start <= diagnostic.span.end <= len(text)
    fix_source(source, project_dir=PROJECT, unsafe=True)
