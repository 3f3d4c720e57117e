"""`use` of a local skill folder is accepted; W007 still flags a skill never imported."""

from __future__ import annotations

from openprose.checker import check_program
from openprose.parser import parse_text


def _codes(source: str) -> list[str]:
    parsed = parse_text(source, "main.prose")
    return [d.code for d in check_program(parsed.program)]


def test_local_skill_folder_is_an_import() -> None:
    source = 'use "./skills/release-notes"\n\nagent a:\n  skills: ["release-notes"]\n'
    assert _codes(source) == []


def test_unimported_skill_still_warns_w007() -> None:
    source = 'use "./skills/release-notes"\n\nagent a:\n  skills: ["web-search"]\n'
    assert _codes(source) == ["W007"]


def test_a_bare_word_is_still_not_a_use_path() -> None:
    assert "E012" in _codes('use "not a path"\n')
