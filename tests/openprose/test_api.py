"""The top-level `openprose` API: lazy re-exports and the check_* conveniences."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import openprose

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_import_is_cheap_and_exports_load_on_first_use() -> None:
    code = (
        "import sys, openprose\n"
        "heavy = {'openprose.parser', 'openprose.checker', 'openprose.compiler', 'pathlib'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "assert openprose.parse_text('session \"x\"').ok\n"
        "assert 'openprose.parser' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_every_export_resolves() -> None:
    for name in openprose.__all__:
        assert getattr(openprose, name) is not None
    with pytest.raises(AttributeError):
        _ = openprose.no_such_thing


def test_check_file_and_paths(tmp_path: Path) -> None:
    bad = tmp_path / "sub" / "bad.prose"
    bad.parent.mkdir()
    bad.write_text("session: ghost\n", encoding="utf-8")
    (tmp_path / "ok.prose").write_text('session "fine"\n', encoding="utf-8")
    assert [d.code for d in openprose.check_file(bad)] == ["E007"]
    assert [d.path for d in openprose.check_paths([tmp_path])] == [str(bad)]
    assert openprose.find_programs(tmp_path) == [tmp_path / "ok.prose", bad]
    assert openprose.find_programs(tmp_path / "missing") == []
    # Unreadable input is a diagnostic, not an exception.
    assert [d.code for d in openprose.check_file(tmp_path / "missing.prose")] == ["E118"]


def test_pipeline_from_the_docs() -> None:
    result = openprose.parse_text('session "Hello"\n')
    assert openprose.check(result) == []
    assert openprose.compile_program(result.program) == 'session "Hello"\n'
    assert openprose.format_source(result) == 'session "Hello"\n'
    assert openprose.canonicalize(result.program) == result.program


def test_check_paths_takes_one_path_and_reports_missing_ones(tmp_path: Path) -> None:
    bad = tmp_path / "bad.prose"
    bad.write_text("session: ghost\n", encoding="utf-8")
    (tmp_path / "empty").mkdir()
    # a single path is one path, not a sequence of one-character paths
    assert [d.code for d in openprose.check_paths(tmp_path)] == ["E007"]
    assert [d.code for d in openprose.check_paths(str(tmp_path))] == ["E007"]
    # a missing path is reported (as check_file does), an empty directory is just empty
    missing = tmp_path / "missing.prose"
    found = openprose.check_paths([missing, tmp_path / "empty"])
    assert [(d.code, d.path) for d in found] == [("E118", str(missing))]


def test_check_accepts_program_text() -> None:
    assert [(d.code, d.line, d.column) for d in openprose.check("session: ghost\n")] == [
        ("E007", 1, 10)
    ]
    assert openprose.check('session "fine"\n') == []
