"""`prose explain`'s examples: for every code, `prose check` of the wrong program reports it
and of the right program does not (run in a folder of their own, with their files)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprose.cli import main
from openprose.code_examples import EXAMPLES, Example
from openprose.codes import CODES


def codes_reported(folder: Path, name: str, data: bytes, example: Example) -> list[str]:
    """The codes `prose check --format json` reports for ``data`` saved as ``name``."""
    folder.mkdir()
    for other, text in example.files.items():
        (folder / other).parent.mkdir(parents=True, exist_ok=True)
        (folder / other).write_text(text, encoding="utf-8")
    program = folder / name
    if example.wrong == "" and data == b"":  # E118: no file there to read
        import openprose

        assert _check(program) == []  # `prose check` tells it on stderr, exit 2
        return [d.code for d in openprose.check_file(program)]
    program.write_bytes(data)
    return [d["code"] for d in _check(program)]


def _check(program: Path) -> list[dict[str, object]]:
    """What `prose check --format json PROGRAM` reports; never a traceback."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["check", "--format", "json", str(program)])
    assert status in (0, 1) or (status == 2 and not program.exists()), err.getvalue()
    found: list[dict[str, object]] = json.loads(out.getvalue())
    return found


def test_every_code_has_an_example() -> None:
    assert list(EXAMPLES) == list(CODES)


@pytest.mark.parametrize("code", list(CODES))
def test_the_wrong_program_reports_the_code(code: str, tmp_path: Path) -> None:
    example = EXAMPLES[code]
    assert code in codes_reported(
        tmp_path / "wrong", "wrong.prose", example.wrong_source(), example
    )


@pytest.mark.parametrize("code", list(CODES))
def test_the_right_program_does_not(code: str, tmp_path: Path) -> None:
    example = EXAMPLES[code]
    found = codes_reported(tmp_path / "right", "right.prose", example.right.encode(), example)
    assert code not in found
    assert not [c for c in found if c.startswith("E")], found  # and it has no error at all


def test_explain_prints_both_examples(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "E104"]) == 0
    out = capsys.readouterr().out
    assert 'Wrong:\n    session "Write the draft"\n      session "Review it"\n' in out
    assert 'Right:\n    session "Write the draft"\n    session "Review it"\n' in out
    assert "Fix: " in out and "Rule: " in out
