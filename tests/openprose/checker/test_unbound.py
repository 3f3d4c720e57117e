"""W156: a name bound only in a body that may not run, used after that body has ended."""

from __future__ import annotations

import pytest

from openprose.checker import check
from openprose.parser import parse_text


def _w156(source: str) -> list[tuple[int, int, str]]:
    found = check(parse_text(source))
    return [(d.line, d.column, d.message) for d in found if d.code == "W156"]


@pytest.mark.parametrize(
    ("source", "where", "what"),
    [
        ('if **green**:\n  let x = session "A"\nsession "B {x}"\n', (3, 12), "if branch at line 1"),
        (
            'if **green**:\n  session "A"\nelse:\n  let x = session "B"\nsession "C"\n  context: x\n',
            (6, 12),
            "else branch",
        ),
        (
            'choice **best**:\n  option "a":\n    let x = session "A"\nsession "B {x}"\n',
            (4, 12),
            "option at line 2",
        ),
        (
            'try:\n  let x = session "A"\ncatch:\n  session "F"\nsession "B {x}"\n',
            (5, 12),
            "try body at line 1",
        ),
        (
            'let xs = ["a"]\nfor i in xs:\n  let x = session "A {i}"\nsession "B {x}"\n',
            (4, 12),
            "for body at line 2",
        ),
        (
            'loop until **done** (max: 3):\n  let x = session "A"\nsession "B"\n  context: { x }\n',
            (4, 14),
            "loop until body",
        ),
        (
            'if **green**:\n  let x = session "A"\nelse:\n  session "B {x}"\n',
            (4, 14),
            "if branch at line 1",
        ),
    ],
)
def test_a_name_bound_in_a_body_that_may_not_run(
    source: str, where: tuple[int, int], what: str
) -> None:
    found = _w156(source)
    assert [(line, column) for line, column, _ in found] == [where]
    message = found[0][2]
    assert what in message and "may be unbound" in message and "let x = " in message


@pytest.mark.parametrize(
    "source",
    [
        # used inside the body that bound it
        'if **green**:\n  let x = session "A"\n  session "B {x}"\n',
        # bound before the branch, assigned inside
        'let x = ""\nif **green**:\n  x = session "A"\nsession "B {x}"\n',
        # bodies that always run
        'repeat 2:\n  let x = session "A"\nsession "B {x}"\n',
        'loop (max: 2):\n  let x = session "A"\nsession "B {x}"\n',
        'do:\n  let x = session "A"\nsession "B {x}"\n',
        'try:\n  session "A"\nfinally:\n  let x = session "F"\nsession "B {x}"\n',
        # a named parallel branch is always bound once the block joins
        'parallel ("first"):\n  a = session "A"\n  b = session "B"\nsession "C {a} {b}"\n',
    ],
)
def test_names_that_are_always_bound(source: str) -> None:
    assert _w156(source) == []
