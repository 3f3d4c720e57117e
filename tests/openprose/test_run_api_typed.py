"""Typed results from Python: `openprose.run` gives a typed output as dicts and lists, and a
program whose shape is broken is refused before it runs (E180), with no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

import openprose
from openprose.cli import main

RULES = """\
rules:
  - match: "^Review"
    answer: '{"title": "Null check", "severity": "high", "files": ["a.py"]}'
"""

PROGRAM = """\
output review = session "Review the change"
  returns:
    title: string
    severity: "low" | "high"
    files: list of string
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROSE_PROVIDER", raising=False)
    (tmp_path / "rules.yaml").write_text(RULES)
    return tmp_path


def test_a_typed_output_is_a_dict(project: Path) -> None:
    result = openprose.run(PROGRAM, provider="scripted:rules.yaml")
    assert result.status == "succeeded", result.error
    assert result.outputs == {
        "review": {"title": "Null check", "severity": "high", "files": ["a.py"]}
    }


def test_a_broken_shape_is_refused_before_the_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "p.prose").write_text(PROGRAM.replace("list of string", "list of strng"))
    assert main(["run", "p.prose", "--provider", "scripted:rules.yaml"]) == 2
    shown = capsys.readouterr()
    assert "p.prose:5:20: E180 Unknown type 'strng' (did you mean `string`?)" in shown.out
    assert "the program was not run" in shown.err and "Traceback" not in shown.err
