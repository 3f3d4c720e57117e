"""Every ```prose block of the language reference parses (copied by extract.py).

Nine blocks are syntax schematics rather than programs: they stand a placeholder where
statements go (``statement1``, ``...``, ``statements...``, ``body...``) or show a bare
string. Those must still parse without a traceback and report exactly the diagnostics listed
here, at these positions; every other block must parse with no diagnostics at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose import nodes as n
from openprose.parser import parse_text

EXAMPLES = sorted((Path(__file__).parent / "reference_examples").glob("*.prose"))

E116, E004 = "E116", "E004"
# file -> (code, line, column) of each expected diagnostic (line 1 is the provenance comment)
SCHEMATIC: dict[str, list[tuple[str, int, int]]] = {
    "005.prose": [(E116, 2, 1)],  # "This is a string"
    "043.prose": [(E116, 3, 3), (E116, 4, 3), (E004, 5, 3)],  # statement1 / ...
    "045.prose": [(E116, 3, 3), (E116, 4, 3), (E004, 5, 3)],
    "048.prose": [(E116, 4, 3), (E116, 5, 3)],
    "091.prose": [(E004, 3, 8)],  # body...
    "118.prose": [(E004, 4, 16), (E004, 6, 16)],  # statements...
    "124.prose": [(E004, 3, 14)],
    "125.prose": [(E004, 3, 14), (E004, 5, 14)],
    "126.prose": [(E004, 3, 14), (E004, 5, 14), (E004, 7, 14), (E004, 9, 14)],
}


def test_corpus_is_complete() -> None:
    # The reference has 140 ```prose blocks; extract.py numbers them in document order.
    assert len(EXAMPLES) == 140
    assert [p.name for p in EXAMPLES] == [f"{i:03d}.prose" for i in range(1, 141)]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_reference_example_parses(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    result = parse_text(text, str(path))
    found = [(d.code, d.line, d.column) for d in result.diagnostics]
    assert found == SCHEMATIC.get(path.name, [])
    if path.name not in SCHEMATIC:
        assert not any(isinstance(s, n.Invalid) for s in result.program.body)
        assert result.program.body or text.count("\n") <= 1


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_crlf_gives_the_same_tree(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lf = parse_text(text)
    crlf = parse_text(text.replace("\n", "\r\n"))
    assert crlf.program == lf.program
    assert [d.code for d in crlf.diagnostics] == [d.code for d in lf.diagnostics]
