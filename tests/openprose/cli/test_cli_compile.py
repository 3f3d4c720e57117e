"""`prose compile FILE`: canonical text on stdout, diagnostics on stderr."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from openprose.compiler import canonicalize, compile_program
from openprose.parser import parse_text

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
Run = Callable[..., tuple[int, str, str]]


def test_compiles_an_example_to_its_canonical_form(prose: Run) -> None:
    path = EXAMPLES / "composition.prose"
    code, out, err = prose("compile", path)
    source = parse_text(path.read_text(encoding="utf-8"))
    assert (code, err) == (0, "")
    assert out == compile_program(source.program)
    assert parse_text(out).program == canonicalize(source.program)
    assert "#" not in out  # comments stripped


def test_program_with_errors_prints_diagnostics_and_no_program(prose: Run, tmp_path: Path) -> None:
    path = tmp_path / "bad.prose"
    path.write_text('session "ok"\nsession: nobody\n', encoding="utf-8")
    code, out, err = prose("compile", path)
    assert (code, out) == (1, "")
    assert err.startswith(f"{path}:2:10: E007 ")
    assert "^^^^^^" in err


def test_warnings_go_to_stderr_and_the_program_still_compiles(prose: Run, tmp_path: Path) -> None:
    path = tmp_path / "warn.prose"
    path.write_text('session ""\n', encoding="utf-8")
    code, out, err = prose("compile", path)
    assert (code, out) == (0, 'session ""\n')
    assert " W001 " in err


def test_syntax_errors_and_bad_encoding_exit_one(prose: Run, tmp_path: Path) -> None:
    broken = tmp_path / "broken.prose"
    broken.write_text('session "unterminated\n', encoding="utf-8")
    latin = tmp_path / "latin.prose"
    latin.write_bytes(b'session "\xe9"\n')
    for path, code_ in ((broken, "E001"), (latin, "E100")):
        code, out, err = prose("compile", path)
        assert (code, out) == (1, "")
        assert f" {code_} " in err


def test_missing_file_and_directory_are_usage_errors(prose: Run, tmp_path: Path) -> None:
    code, out, err = prose("compile", tmp_path / "missing.prose")
    assert (code, out) == (2, "") and "missing.prose" in err
    code, out, err = prose("compile", tmp_path)
    assert (code, out) == (2, "") and "directory" in err


def test_compile_subprocess(prose_process: Run) -> None:
    code, out, err = prose_process("compile", EXAMPLES / "hello.prose")
    assert (code, out, err) == (0, 'session "Hello world"\n', "")


def test_a_device_is_not_reported_as_missing(prose: Run) -> None:
    code, out, err = prose("compile", "/dev/null")
    assert (code, out) == (2, "")
    assert err == "prose: /dev/null: cannot read file: not a regular file\n"
