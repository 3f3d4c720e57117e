"""The Problem record and its cheap factory."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from vlp.errors import Problem, new_problem


@pytest.mark.parametrize(
    ("code", "message", "line", "ident"),
    [("VLP101", "missing required field 'id'", 3, "m1"), ("VLP001", "bad", None, None)],
)
def test_new_problem_is_the_same_record_as_the_constructor(
    code: str, message: str, line: int | None, ident: str | None
) -> None:
    made = new_problem(code, message, line, ident)
    built = Problem(code, message, line, ident)
    assert type(made) is Problem
    assert made == built and hash(made) == hash(built)
    assert repr(made) == repr(built) and str(made) == str(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert copy.copy(made) == built
    assert dataclasses.replace(made, message="other") == Problem(code, "other", line, ident)
    assert dataclasses.astuple(made) == (code, message, line, ident)


def test_new_problem_is_frozen_and_differs_by_every_field() -> None:
    made = new_problem("VLP101", "m", 1, "a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.code = "VLP102"  # type: ignore[misc]
    assert made != new_problem("VLP102", "m", 1, "a")
    assert made != new_problem("VLP101", "n", 1, "a")
    assert made != new_problem("VLP101", "m", 2, "a")
    assert made != new_problem("VLP101", "m", 1, "b")
    assert made != ("VLP101", "m", 1, "a")
