"""`openprose.test` / `atest`: `prose test` from Python."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

import openprose

PROGRAM = 'session "Name a colour"\n'
TESTS = """\
[[case]]
name = "names red"
rules = [{ match = "colour", answer = "red" }]
expect = [{ of = "result", equals = "red" }]

[[case]]
name = "names blue"
rules = [{ match = "colour", answer = "red" }]
expect = [{ of = "result", equals = "blue" }]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scratch").mkdir()  # the cases' temporary folders (a failed one is kept)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "scratch"))
    (tmp_path / "colour.prose").write_text(PROGRAM)
    (tmp_path / "colour.test.toml").write_text(TESTS)
    return tmp_path


def test_test_returns_each_outcome(project: Path) -> None:
    suite = openprose.test([project])
    assert not suite.passed
    assert (suite.count("passed"), suite.count("failed")) == (1, 1)
    failed = next(o for o in suite.outcomes if o.outcome == "failed")
    assert failed.case.name == "names blue"
    assert failed.failures == ["colour.test.toml:9: result: expected 'blue', got 'red'"]
    only = openprose.test(["colour.test.toml"], keyword="red")
    assert only.passed and only.deselected == 1


async def test_atest_inside_async_code(project: Path) -> None:
    suite = await openprose.atest(["colour.test.toml"], keyword="not blue")
    assert suite.passed and [o.id for o in suite.outcomes] == ["colour.test.toml::names red"]
    with pytest.raises(RuntimeError, match=r"use `await openprose.atest\(...\)`"):
        openprose.test(["colour.test.toml"])


def test_a_bad_test_file_raises_run_error_with_its_line(project: Path) -> None:
    (project / "colour.test.toml").write_text('[[case]]\nname = "x"\nexpect = [{ of = "nope" }]\n')
    with pytest.raises(openprose.RunError, match=r"^colour\.test\.toml:3: case 'x', expect 1"):
        openprose.test()
    assert openprose.test.__test__ is False  # pytest never collects it from a test module
