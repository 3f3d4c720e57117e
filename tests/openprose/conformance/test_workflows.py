"""Realistic workflows through every command (see workflows/README.md).

For each program: the diagnostics are exactly the expected ones and each names its rule and
a way out; `check --fix` (and `--unsafe-fixes`) gives the expected text, is idempotent and
never leaves an error it had a safe fix for; a program the fixes leave without errors is
formatted (idempotent, same tree), compiled (parses back to the canonical tree) and run on
the scripted provider to the status expected.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from openprose import api
from openprose.checker import check
from openprose.compiler import canonicalize, compile_program
from openprose.fixes import fix_source
from openprose.formatter import format_source
from openprose.parser import parse_text
from openprose.source import SourceFile
from tests.openprose.conformance.test_real_programs import expected_diagnostics

HERE = Path(__file__).parent / "workflows"
PROGRAMS = sorted(HERE.glob("*.prose"))
# Runs that must fail, and what their error says.
FAILING_RUNS = {
    # the scripted judge always says the parts are still too large: the block's own limit
    "31-recursive-outline": "block 'expand' exceeded max_depth 3",
    # `persist: project` memory does not exist in a fresh project (the reference's E018)
    "40-persistent-advisor": "no memory exists yet for agent 'advisor'",
}
# Programs importing from the registry: checked, not run (tests use no network).
OFFLINE_ONLY = {"09-web-research", "53-use-registry"}


def _id(path: Path) -> str:
    return path.stem


def _fixed(path: Path, unsafe: bool) -> str:
    for suffix in (".unsafe", ".fixed") if unsafe else (".fixed",):
        if path.with_suffix(suffix).exists():
            return path.with_suffix(suffix).read_text(encoding="utf-8")
    return path.read_text(encoding="utf-8")


def _errors(text: str, path: Path) -> list[str]:
    return [d.code for d in check(parse_text(text, str(path))) if d.is_error]


def test_the_corpus_is_there() -> None:
    assert len(PROGRAMS) >= 40


@pytest.mark.parametrize("path", PROGRAMS, ids=_id)
def test_diagnostics_are_the_expected_ones(path: Path) -> None:
    diagnostics = check(parse_text(path.read_text(encoding="utf-8"), str(path)))
    assert [(d.code, d.line, d.column) for d in diagnostics] == expected_diagnostics(path)
    for d in diagnostics:
        assert d.rule and d.help, d


@pytest.mark.parametrize("unsafe", [False, True], ids=["fix", "unsafe-fixes"])
@pytest.mark.parametrize("path", PROGRAMS, ids=_id)
def test_check_fix_gives_the_expected_text(path: Path, unsafe: bool) -> None:
    text = path.read_text(encoding="utf-8")
    before = check(parse_text(text, str(path)))
    result = fix_source(SourceFile.from_text(text, str(path)), unsafe=unsafe)
    assert result.text == _fixed(path, unsafe)
    again = fix_source(SourceFile.from_text(result.text, str(path)), unsafe=unsafe)
    assert not again.changed, [f.title for f in again.applied]
    left = [d for d in result.remaining if d.is_error]
    assert len(left) <= len([d for d in before if d.is_error])
    assert not [d for d in left if d.fix is not None and (d.fix.safe or unsafe)], left


CLEAN = [p for p in PROGRAMS if not _errors(_fixed(p, unsafe=True), p)]


def test_most_programs_are_runnable_once_fixed() -> None:
    assert len(CLEAN) >= 30


@pytest.mark.parametrize("path", CLEAN, ids=_id)
def test_fmt_and_compile_keep_the_fixed_program(path: Path) -> None:
    parsed = parse_text(_fixed(path, unsafe=True), str(path))
    formatted = format_source(parsed)
    again = parse_text(formatted, str(path))
    assert again.ok, formatted
    assert canonicalize(again.program) == canonicalize(parsed.program)
    assert format_source(again) == formatted
    assert not _errors(formatted, path)
    compiled = compile_program(parsed.program)
    back = parse_text(compiled, str(path))
    assert back.ok, compiled
    assert back.program == canonicalize(parsed.program)
    assert compile_program(back.program) == compiled


@pytest.mark.parametrize("path", [p for p in CLEAN if p.stem not in OFFLINE_ONLY], ids=_id)
def test_the_fixed_program_runs_on_the_scripted_provider(path: Path, tmp_path: Path) -> None:
    program = tmp_path / path.name
    program.write_text(_fixed(path, unsafe=True), encoding="utf-8")
    shutil.copytree(HERE / "lib", tmp_path / "lib")
    names = re.findall(r"^input (\w+)", program.read_text(encoding="utf-8"), re.MULTILINE)
    result = api.run(
        str(program),
        inputs={name: f"sample {name}" for name in names},
        provider=f"scripted:{HERE / 'scripted.yaml'}",
        project_dir=tmp_path,
        yes=True,
    )
    failure = FAILING_RUNS.get(path.stem)
    if failure is None:
        assert result.status == "succeeded", result.error
    else:
        assert result.status == "failed" and failure in (result.error or "")
