"""The checker on every program block of the reference (tests/openprose/conformance/...).

Most blocks are complete programs and must pass clean. The rest are fragments that use names
defined elsewhere in the prose, or examples the reference itself calls errors or warnings;
each gets exactly the diagnostics listed here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openprose.checker import check_program
from openprose.parser import parse_text

EXAMPLES = Path(__file__).resolve().parents[1] / "conformance" / "reference_examples"

EXPECTED: dict[str, list[tuple[str, int, int]]] = {
    "010.prose": [("E010", 3, 5)],  # the syntax demo imports "@handle/slug" twice
    "014.prose": [("E140", 2, 15)],  # `output name = expression` schematic
    "015.prose": [("E141", 2, 29)],  # `{topic}` is an input of another example
    "016.prose": [("E140", 2, 14), ("E140", 2, 30), ("E025", 2, 1)],  # call schematic
    "017.prose": [("I002", 2, 5)],  # invokes '@alice/research': contract unknown offline
    "018.prose": [("E142", 3, 12), ("E142", 6, 12)],  # `result` comes from another example
    "019.prose": [("E025", 2, 29)],  # destructures `research(...)` without its `use`
    "020.prose": [("W007", 5, 12), ("W007", 5, 22)],  # skills "skill1", "skill2" not imported
    "024.prose": [("W007", 23, 12), ("W007", 23, 26)],  # agent examples without `use`
    "026.prose": [("E007", 2, 10)],  # `session: agentName` schematics
    "027.prose": [("E007", 2, 22)],
    "028.prose": [("E007", 2, 10)],
    "032.prose": [("E007", 2, 9)],
    "033.prose": [("E142", 10, 12), ("E142", 15, 12)],  # `plan`, `step1` defined elsewhere
    "042.prose": [("E158", 4, 13), ("E019", 5, 7)],  # "This is a compile error" (flat namespace)
    "046.prose": [("E148", 2, 4)],  # `do blockname` schematic
    "049.prose": [("E140", 2, 9), ("E140", 2, 15), ("E148", 2, 4)],  # `do name(arg1, arg2)`
    "078.prose": [("E143", 3, 34), ("E143", 4, 39), ("E143", 5, 37)],  # informal `context: "AI"`
    "079.prose": [("W144", 3, 5)],  # loop variable shadows outer "(with a warning)"
    "085.prose": [("W145", 2, 1)],  # "Loops without ... max iterations generate a warning"
    "089.prose": [("W146", 2, 12)],  # `**done**`: a one-word condition
    "097.prose": [("W146", 3, 12), ("W144", 3, 24)],  # `**done**` and `as i` shadowing
    "105.prose": [("W147", 5, 21)],  # map's `item` shadows outer "(shadows outer)"
}

FILES = sorted(EXAMPLES.glob("*.prose"))


@pytest.mark.skipif(not FILES, reason="reference examples not extracted")
@pytest.mark.parametrize("path", FILES, ids=[path.name for path in FILES])
def test_reference_example(path: Path) -> None:
    result = parse_text(path.read_text(encoding="utf-8"), path.name)
    if result.diagnostics:
        pytest.skip("a syntax schematic (the parser's tests cover it)")
    found = [(d.code, d.line, d.column) for d in check_program(result.program)]
    assert found == EXPECTED.get(path.name, [])
