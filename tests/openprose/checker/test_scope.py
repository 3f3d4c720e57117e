"""Names and scopes: the decisions of docs/decisions.md, OpenProse: checker, each as exact diagnostics.

Every case lists *all* diagnostics the program gets, as (code, line, column).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from openprose.diagnostics import Diagnostic

Check = Callable[..., list[Diagnostic]]

CASES: dict[str, tuple[str, list[tuple[str, int, int]]]] = {
    # Flat namespace: let/const/output/input/branch names are unique program-wide (E019)...
    "if and else branches may not reuse a name": (
        ('if **the build is green**:\n  let note = session "A"\nelse:\n  let note = session "B"\n'),
        [("E019", 4, 7)],
    ),
    "a let inside a loop may not reuse a loop variable": (
        'for x in ["a"]:\n  let x = session "A"\n',
        [("E019", 2, 7)],
    ),
    "a let in a block body collides with a top-level let": (
        'let summary = session "A"\nblock b:\n  let summary = session "B"\n',
        [("E019", 3, 7)],
    ),
    "an input may not be redeclared by let": (
        'input topic: "The topic"\nlet topic = session "A"\n',
        [("E019", 2, 5)],
    ),
    "a let may not reuse an output name": (
        'output report = session "A"\nlet report = session "B"\n',
        [("E146", 2, 5)],
    ),
    # ...while scoped names (loop, pipeline, error variables, parameters) only warn.
    "sibling loops may reuse their loop variable": (
        'for x in ["a"]:\n  session "A"\nfor x in ["b"]:\n  session "B"\n',
        [],
    ),
    "a loop variable is not visible after the loop": (
        'for x in ["a"]:\n  session "A"\nsession "After"\n  context: x\n',
        [("E142", 4, 12)],
    ),
    "a let after a loop may reuse the loop variable's name": (
        'for x in ["a"]:\n  session "A"\nlet x = session "B"\n',
        [],
    ),
    "a loop variable is const": ('for x in ["a"]:\n  x = session "A"\n', [("E144", 2, 3)]),
    "a block parameter is const": ('block b(topic):\n  topic = session "A"\n', [("E144", 2, 3)]),
    "repeat index shadows an outer variable with a warning": (
        'let i = session "A"\nrepeat 2 as i:\n  session "B"\n',
        [("W144", 2, 13)],
    ),
    "the for index variable is bound too": ('for x, i in ["a"]:\n  session "{x} {i}"\n', []),
    # Lets in nested bodies stay visible afterwards (one binding per name, like Python); when
    # the body may not have run, the use is warned about (W156, issue 20 item 11).
    "a let inside if is visible after it": (
        'if **the build is green**:\n  let note = session "A"\nsession "B"\n  context: note\n',
        [("W156", 4, 12)],
    ),
    # Definition order: variables must be defined before use; blocks and agents are hoisted.
    "a variable used before its let is undefined": (
        'session "A"\n  context: later\nlet later = session "B"\n',
        [("E142", 2, 12)],
    ),
    "a block may be invoked before its definition": (
        'do checks\nblock checks:\n  session "Check"\n',
        [],
    ),
    "an agent may be used before its definition": (
        "session: writer\nagent writer:\n  model: opus\n",
        [],
    ),
    "a block body may use a variable defined after the block": (
        'block report:\n  session "Report {summary}"\nlet summary = session "Sum"\ndo report\n',
        [],
    ),
    "a block body's unknown variable is still an error": (
        'block report:\n  session "Report {nothing}"\n',
        [("E141", 2, 19)],
    ),
    "a block's local let is not visible after the block": (
        'block b:\n  let inner = session "A"\nsession "B"\n  context: inner\n',
        [("E142", 4, 12)],
    ),
    "an agent's context may name a variable defined later": (
        'agent a:\n  context: notes\nlet notes = session "N"\n',
        [],
    ),
    # Implicit and bound names.
    "item is bound in map bodies only": (
        (
            'let xs = ["a"]\nlet ys = xs | map:\n  session "S"\n    context: item\n'
            'session "After"\n  context: item\n'
        ),
        [("E142", 6, 12)],
    ),
    "reduce binds its accumulator and item names": (
        'let xs = ["a"]\nlet y = xs | reduce(acc, x):\n  session "S"\n    context: [acc, x]\n',
        [],
    ),
    "err is visible only in its catch": (
        (
            'try:\n  session "A"\ncatch as err:\n  session "B"\n    context: err\n'
            'session "C"\n  context: err\n'
        ),
        [("E142", 7, 12)],
    ),
    "parallel branch results are visible after the block": (
        'parallel:\n  a = session "A"\n  b = session "B"\nsession "C"\n  context: { a, b }\n',
        [],
    ),
    "a parallel branch cannot see a sibling's result": (
        'parallel:\n  a = session "A"\n  b = session "B"\n    context: a\n',
        [("E142", 4, 14)],
    ),
    "destructured names become variables": (
        (
            'use "@alice/research" as research\nlet { findings, sources } = research(topic: "x")\n'
            'session "S"\n  context: [findings, sources]\n'
        ),
        [("I002", 1, 5)],
    ),
    "interpolation position is the braces inside a multi-line string": (
        'session """\nReview:\n  - {missing}\n"""\n',
        [("E141", 3, 5)],
    ),
    "an escaped brace is not an interpolation": ('session "literal \\{name}"\n', []),
    "assignment to an undeclared name is an error": ('draft = session "A"\n', [("E140", 1, 1)]),
    "let may be reassigned": (
        'let draft = session "A"\ndraft = session "B"\n  context: draft\n',
        [],
    ),
    "a named session needs no variable": (
        'agent r:\n  model: opus\nsession analysis: r\n  prompt: "Analyze"\n',
        [],
    ),
    "a parallel branch may not reuse an outer name": (
        'let a = session "A"\nparallel:\n  a = session "B"\n',
        [("E019", 3, 3)],
    ),
    "a top-level let may share a block parameter's name": (
        'block b(topic):\n  session "{topic}"\nlet topic = session "T"\ndo b(topic)\n',
        [],
    ),
    # Agents vs variables vs blocks.
    "a loop variable may not be named like an agent": (
        'agent x:\n  model: opus\nfor x in ["a"]:\n  session: x\n',
        [("E145", 3, 5)],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_scope_decision(name: str, checked: Check) -> None:
    source, expected = CASES[name]
    assert [(d.code, d.line, d.column) for d in checked(source)] == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('let y = session "a" "b"\nsession "{y}"\n', [("E004", 1, 21)]),
        ('let { p, q } =\nsession "{p} {q}"\n  context: [p, q]\n', [("E005", 1, 15)]),
        ("agent a\n  model: sonnet\nsession: a\n", [("E005", 1, 8)]),
        ('block b(x:\n  session "x"\ndo b\n', [("E109", 1, 8)]),
        ('use "@a/b" junk\nlet r = b(x: 1)\n', [("E004", 1, 12)]),
        # only the broken statement's own names are spared: `w` is still undefined
        ('do:\n  let z = session "a" "b"\nsession "{z} {w}"\n', [("E004", 2, 23), ("E141", 3, 14)]),
    ],
)
def test_names_of_a_statement_that_failed_to_parse_do_not_cascade(
    source: str, expected: list[tuple[str, int, int]]
) -> None:
    from openprose.checker import check

    assert [(d.code, d.line, d.column) for d in check(source)] == expected


def test_a_name_declared_in_a_block_is_said_to_end_with_it(checked: Check) -> None:
    text = 'block review(p):\n  let verdict = session "Review {p}"\ndo review("a")\nsession "Use"\n  context: verdict\n'
    (found,) = checked(text)
    assert found.code == "E142"
    assert "declared in block 'review', line 2" in found.message
    assert "`let verdict = do review(...)`" in found.message


def test_a_block_met_during_the_walk_counts_for_later_context_names(checked: Check) -> None:
    """The block parameters are gathered once, and again when a block nested in another
    is registered: `mood` (of a block met after the first `context:`) is still said to live
    only in a block, and its fix offered."""
    text = (
        'session "One"\n  context: topic\n\n'
        'block outer(topic):\n  block inner(mood):\n    session "Feeling {mood}"\n'
        '  session "About {topic}"\n\n'
        'session "Two"\n  context: mood\n'
    )
    found = [(d.code, d.span.line, d.fix and d.fix.title) for d in checked(text)]
    assert found == [
        ("E142", 2, "remove `topic` from the context"),
        ("E142", 10, "remove `mood` from the context"),
    ]


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        # the same variable, further in: reassignment is what it means
        ('let d = session "A"\nif **x y**:\n  let d = session "B"\n', True),
        # a block re-using a program's name means its own name: no fix
        ('let d = session "A"\nblock b:\n  let d = session "B"\n', False),
        ('block b:\n  let d = session "A"\n  if **x y**:\n    let d = session "B"\n', True),
        ('const d = session "A"\nlet d = session "B"\n', False),
        # at the same level a second `let` may be meant as a second name
        ('let d = session "A"\nlet d = session "B"\n', False),
    ],
)
def test_a_second_let_of_a_visible_let_is_fixed_to_an_assignment(
    checked: Check, text: str, fixed: bool
) -> None:
    (found,) = [d for d in checked(text) if d.code == "E019"]
    assert (found.fix is not None and found.fix.title.startswith("assign")) is fixed
    if not fixed:  # a second name, then: the later one is renamed (unsafe, issue 36)
        assert found.fix is not None and not found.fix.safe
        assert found.fix.title == "rename this `d` and its uses to `d_2`"


def test_sibling_branch_result_says_why_it_is_undefined(checked: Check) -> None:
    source = 'parallel:\n  a = session "A"\n  b = session "{a}"\nsession "{b}"\nsession "{c}"\n'
    found = checked(source)
    assert [(d.code, d.line, d.column) for d in found] == [("E141", 3, 16), ("E141", 5, 10)]
    assert found[0].message.endswith("exists once the parallel block ends)")
    assert "parallel" not in found[1].message  # only names of the block being walked
