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
