"""Character columns <-> client code units in each position encoding LSP allows."""

from __future__ import annotations

import pytest

from openprose.lsp.positions import Lines
from openprose.source import SourceFile

TEXT = 'session "é😀x"\r\nlet y = 1\n'


@pytest.mark.parametrize(
    ("encoding", "units_of_x"),
    [("utf-16", 12), ("utf-8", 15), ("utf-32", 11)],  # `x` is character 11 of line 0
)
def test_units_follow_the_agreed_encoding(encoding: str, units_of_x: int) -> None:
    lines = Lines(SourceFile.from_text(TEXT), encoding)
    x = TEXT.index("x")
    assert lines.position_of(x) == (0, units_of_x)
    assert lines.offset(0, units_of_x) == x
    # ASCII lines need no counting and agree in every encoding.
    assert lines.position_of(TEXT.index("y")) == (1, 4)


def test_positions_past_the_text_are_clamped() -> None:
    lines = Lines(SourceFile.from_text(TEXT))
    assert lines.offset(0, 999) == TEXT.index("\r")
    assert lines.offset(99, 0) == len(TEXT)
    assert lines.offset(-1, 5) == 0
