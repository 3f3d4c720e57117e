"""`deep_recursion`: the limit is raised while any caller holds it, restored when the last
one leaves (runs of a batch interleave on one event loop), also when one leaves by an error."""

from __future__ import annotations

import sys

import pytest

from openprose.depth import RECURSION_LIMIT, deep_recursion


def test_limit_raised_while_held_and_restored_after_the_last_holder() -> None:
    before = sys.getrecursionlimit()
    assert before < RECURSION_LIMIT
    first, second = deep_recursion(), deep_recursion()
    first.__enter__()
    second.__enter__()
    assert sys.getrecursionlimit() == RECURSION_LIMIT
    first.__exit__(None, None, None)  # the first out while the second still runs deep
    assert sys.getrecursionlimit() == RECURSION_LIMIT
    second.__exit__(None, None, None)
    assert sys.getrecursionlimit() == before


def test_restored_when_the_body_raises() -> None:
    before = sys.getrecursionlimit()
    with pytest.raises(ValueError), deep_recursion():
        raise ValueError("a failing stage")
    assert sys.getrecursionlimit() == before


def test_a_higher_limit_is_kept_as_it_is() -> None:
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(RECURSION_LIMIT * 2)
    try:
        with deep_recursion():
            assert sys.getrecursionlimit() == RECURSION_LIMIT * 2
        assert sys.getrecursionlimit() == RECURSION_LIMIT * 2
    finally:
        sys.setrecursionlimit(before)
