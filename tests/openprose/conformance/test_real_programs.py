"""Programs as people write them, through every front-end command.

- The clean corpora (the repository's examples and `published_style/`): `prose fmt` is
  idempotent and keeps the tree, `prose compile` output parses back to the canonical tree and
  compiles to itself, and LF and CRLF give the same tree.
- `beyond_grammar/`: programs that use what the grammar does not have (operators, `output` as
  a return, keyed objects, non-ASCII names). Each problem is exactly one diagnostic, at the
  position `NAME.expected` lists, naming its rule and how to resolve it; the unsafe fixes
  rewrite what is mechanical and never add an error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.checker import check
from openprose.compiler import canonicalize, compile_program
from openprose.fixes import fix_source
from openprose.formatter import format_source
from openprose.parser import parse_text
from openprose.source import SourceFile

HERE = Path(__file__).parent
ROOT = HERE.parents[2]
CLEAN = sorted([*(ROOT / "examples").glob("*.prose"), *(HERE / "published_style").glob("*.prose")])
BEYOND = sorted((HERE / "beyond_grammar").glob("*.prose"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", CLEAN, ids=_id)
def test_fmt_is_idempotent_and_keeps_the_tree(path: Path) -> None:
    parsed = parse_text(path.read_text(encoding="utf-8"), str(path))
    formatted = format_source(parsed)
    again = parse_text(formatted)
    assert again.ok, formatted
    assert canonicalize(again.program) == canonicalize(parsed.program)
    assert format_source(again) == formatted
    assert not [d for d in check(again) if d.is_error]


@pytest.mark.parametrize("path", CLEAN, ids=_id)
def test_compile_parses_back_to_the_canonical_tree(path: Path) -> None:
    program = parse_text(path.read_text(encoding="utf-8"), str(path)).program
    compiled = compile_program(program)
    back = parse_text(compiled)
    assert back.ok, compiled
    assert back.program == canonicalize(program)
    assert compile_program(back.program) == compiled


@pytest.mark.parametrize("path", CLEAN, ids=_id)
def test_crlf_gives_the_same_tree(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert parse_text(text.replace("\n", "\r\n")).program == parse_text(text).program


def expected_diagnostics(path: Path) -> list[tuple[str, int, int]]:
    """`NAME.expected` beside `NAME.prose`: one `CODE LINE:COLUMN` a line."""
    found = []
    for line in path.with_suffix(".expected").read_text(encoding="utf-8").splitlines():
        code, at = line.split()
        row, column = at.split(":")
        found.append((code, int(row), int(column)))
    return found


def test_the_beyond_grammar_corpus_is_there() -> None:
    assert {p.stem for p in BEYOND} >= {"recursive-refine", "fan-in", "names"}


@pytest.mark.parametrize("path", BEYOND, ids=_id)
def test_each_problem_is_one_diagnostic_with_rule_and_help(path: Path) -> None:
    diagnostics = check(parse_text(path.read_text(encoding="utf-8"), str(path)))
    assert [(d.code, d.line, d.column) for d in diagnostics] == expected_diagnostics(path)
    for d in diagnostics:
        assert d.is_error and d.rule and d.help, d


@pytest.mark.parametrize("path", BEYOND, ids=_id)
def test_unsafe_fixes_rewrite_what_is_mechanical_and_add_no_error(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    before = [d for d in check(parse_text(text)) if d.is_error]
    result = fix_source(SourceFile.from_text(text, str(path)), unsafe=True)
    after = [d for d in result.remaining if d.is_error]
    assert len(after) <= len(before)
    fixed_again = fix_source(SourceFile.from_text(result.text, str(path)), unsafe=True)
    assert fixed_again.text == result.text
    # the safe pass alone changes nothing: every rewrite here changes what decides
    assert fix_source(SourceFile.from_text(text, str(path))).text == text


def test_conditions_and_keyed_objects_are_rewritten_for_the_model() -> None:
    text = (HERE / "beyond_grammar" / "recursive-refine.prose").read_text(encoding="utf-8")
    fixed = fix_source(SourceFile.from_text(text), unsafe=True).text
    assert "  if **depth <= 0**:\n" in fixed
    assert "context: { text, grade }" in fixed
    assert [d.code for d in check(parse_text(fixed)) if d.is_error] == ["E023", "E023", "E102"]
