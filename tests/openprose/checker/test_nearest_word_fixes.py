"""A misspelled agent, block, property or model name carries an unsafe fix to the nearest
known name: `prose check --fix --unsafe-fixes` and an editor's quick fix apply it."""

from __future__ import annotations

from pathlib import Path

import pytest

import openprose
from openprose.cli import main

MISSPELLED = """agent critic:
  model: sonet
  promt: "Review"
block greet(x):
  session "Hi {x}"
session: critc
  prompt: "Look"
do gret("a")
"""


def test_each_misspelling_carries_an_unsafe_fix() -> None:
    diagnostics = openprose.check(openprose.parse_text(MISSPELLED))
    fixes = {d.code: d.fix for d in diagnostics if d.fix is not None}
    assert set(fixes) == {"E008", "W005", "E007", "E148"}
    assert all(not fix.safe for fix in fixes.values())
    assert [e.text for e in fixes["E007"].edits] == ["critic"]
    assert [e.text for e in fixes["E148"].edits] == ["greet"]


def test_unsafe_fixes_apply_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "p.prose"
    program.write_text(MISSPELLED)
    assert main(["check", "--fix", str(program)]) == 1  # safe fixes only: nothing to do
    assert program.read_text() == MISSPELLED
    assert main(["check", "--fix", "--unsafe-fixes", str(program)]) == 0
    fixed = program.read_text()
    assert "model: sonnet" in fixed and 'prompt: "Review"' in fixed
    assert "session: critic" in fixed and 'do greet("a")' in fixed
    capsys.readouterr()


@pytest.mark.parametrize(
    ("source", "fixed"),
    [
        ("agent critic\n  model: sonnet\n", "agent critic:\n  model: sonnet\n"),
        ('parallel\n  session "a"\n', 'parallel:\n  session "a"\n'),
    ],
)
def test_a_block_header_missing_its_colon_gets_it(
    source: str, fixed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [problem] = [d for d in openprose.check(openprose.parse_text(source)) if d.code == "E005"]
    assert problem.fix is not None and problem.fix.safe  # an indented body follows
    program = tmp_path / "p.prose"
    program.write_text(source)
    assert main(["check", "--fix", str(program)]) == 0
    assert program.read_text() == fixed
    capsys.readouterr()


def test_a_colon_with_no_body_after_it_is_only_offered() -> None:
    [problem] = [
        d for d in openprose.check(openprose.parse_text("agent critic\n")) if d.code == "E005"
    ]
    assert problem.fix is not None and not problem.fix.safe
