"""The gate before a run (`diagnose`): parser and checker diagnostics, once each."""

from __future__ import annotations

from pathlib import Path

from openprose.checker import check, diagnose
from openprose.parser import parse_text


def test_diagnostics_past_the_limit_end_in_one_stop_note(tmp_path: Path) -> None:
    # The parser stops at the limit with its own E117; the VM must not add it a second time.
    parsed = parse_text('session "open\n' * 1200, str(tmp_path / "main.prose"))
    found = diagnose(parsed, tmp_path)
    assert [d.code for d in found].count("E117") == 1
    assert len(found) == len(check(parsed, project_dir=tmp_path))


def test_each_parse_error_is_reported_once(tmp_path: Path) -> None:
    parsed = parse_text('session "open\nlet x = \n', str(tmp_path / "main.prose"))
    found = diagnose(parsed, tmp_path)
    assert found and len(found) == len({(d.code, d.span.start, d.message) for d in found})
    assert [d.span.start for d in found] == sorted(d.span.start for d in found)
