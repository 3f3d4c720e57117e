"""E019 between exclusive branches (`checker/branches.py`), wherever the `if` sits."""

from __future__ import annotations

from openprose.checker import check

SAME_NAME_IN_BRANCHES = (
    '  if **x**:\n    let y = session "b"\n  else:\n    let y = session "c"\nsession "use {y}"\n'
)


def _e019(text: str) -> list[str]:
    return [d.message for d in check(text) if d.code == "E019" and d.fix is not None]


def test_an_if_in_a_do_block_is_a_branch_group() -> None:
    assert len(_e019("do:\n" + SAME_NAME_IN_BRANCHES)) == 1


def test_an_if_in_an_arrow_steps_do_block_is_a_branch_group_too() -> None:
    # The walk before issue 30 skipped arrow steps: the second `let` was a plain duplicate.
    found = _e019('session "a" -> do:\n' + SAME_NAME_IN_BRANCHES)
    assert len(found) == 1 and "another branch of this if" in found[0]


def test_the_grouping_walk_finds_what_the_full_walk_finds() -> None:
    """`find_groups` walks only what may hold a parallel block, an `if` or a `choice`: on
    every example and conformance program it meets the same nodes, in the same order."""
    from pathlib import Path

    from openprose import nodes as n
    from openprose.checker.branches import _GROUPING, _grouping_nodes
    from openprose.parser import parse_text

    root = Path(__file__).resolve().parents[3]
    files = sorted(root.glob("examples/*.prose")) + sorted(
        (root / "tests/openprose/conformance").rglob("*.prose")
    )
    assert len(files) > 20
    nested = 'if **a**:\n  let x = parallel:\n    y = session "b"\n  choice **c**:\n'
    nested += '    option "d":\n      if **e**:\n        session "f"\n'
    texts = [f.read_text(encoding="utf-8") for f in files] + [nested]
    for text in texts:
        program = parse_text(text).program
        expected = [id(node) for node in n.walk(program) if type(node) in _GROUPING]
        assert [id(node) for node in _grouping_nodes(program)] == expected
    assert len([*_grouping_nodes(parse_text(nested).program)]) == 4
