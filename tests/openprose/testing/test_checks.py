"""Every check kind, holding and failing, with the failure message it gives."""

from __future__ import annotations

from typing import Any

import pytest

from openprose.testing.checks import check_expectation
from openprose.testing.observe import Observed
from openprose.testing.spec import Expectation

SEEN = Observed(
    status="succeeded",
    result="Hello! The files are a.py and b.py.",
    outputs={"report": {"count": 2, "files": ["a.py", "b.py"]}, "raw": '```json\n{"n": 1}\n```'},
    bindings={"draft": "first draft"},
    sessions=3,
    judgments=1,
    tool_calls=2,
    tokens=120,
    cost=0.004,
    permissions=["read src/a.py", "write output/r.md"],
)


async def _check(of: str, **checks: Any) -> list[str]:
    return await check_expectation(Expectation(of, tuple(checks.items()), 7), SEEN, None)


# (subject, check, expected value that holds, expected value that fails, failure message)
CASES = [
    (
        "result",
        "equals",
        " Hello! The files are a.py and b.py.\n",
        "Hi",
        "result: expected 'Hi', got 'Hello! The files",
    ),
    ("sessions", "equals", 3, 4, "sessions: expected 4, got 3"),
    (
        "permissions",
        "equals",
        ["read src/a.py", "write output/r.md"],
        [],
        'permissions: expected [], got ["read src/a.py"',
    ),
    (
        "output.report",
        "equals",
        {"count": 2, "files": ["a.py", "b.py"]},
        {"count": 3},
        'output.report: expected {"count": 3}, got {"count": 2',
    ),
    ("result", "contains", "b.py", "c.py", "result: expected text containing 'c.py', got 'Hello!"),
    (
        "permissions",
        "contains",
        "write output/r.md",
        "write src/a.py",
        "permissions: expected a list holding 'write src/a.py'",
    ),
    (
        "binding.draft",
        "contains",
        "draft",
        "final",
        "binding.draft: expected text containing 'final', got 'first draft'",
    ),
    (
        "result",
        "regex",
        r"^Hello!.*b\.py\.$",
        r"^Bye",
        "result: expected a match for /^Bye/, got 'Hello!",
    ),
    (
        "permissions",
        "regex",
        r"^write output/",
        r"^write src/",
        "permissions: expected a match for /^write src//",
    ),
    (
        "output.report",
        "schema",
        {"type": "object", "required": ["count"], "properties": {"count": {"type": "integer"}}},
        {
            "type": "object",
            "properties": {"files": {"type": "array", "items": {"pattern": "^src/"}}},
        },
        "output.report: does not match the schema: ['files'][0]: 'a.py' does not match '^src/' (and 1 more)",
    ),
    (
        "output.raw",
        "schema",
        {"type": "object", "properties": {"n": {"const": 1}}},
        {"type": "array"},
        "output.raw: does not match the schema: the value: {'n': 1} is not of type 'array'",
    ),
    (
        "output.report",
        "schema",
        {"type": "object"},
        {"type": "nonsense"},
        "output.report: the schema itself is not valid: 'nonsense' is not valid",
    ),
    ("tool_calls", "at_least", 2, 3, "tool_calls: expected at least 3, got 2"),
    ("cost", "at_most", 0.01, 0.001, "cost: expected at most 0.001, got 0.004"),
    ("permissions", "at_most", 2, 1, "permissions: expected at most 1, got 2"),
    ("judgments", "at_least", 1, 2, "judgments: expected at least 2, got 1"),
    ("result", "at_most", 10**9, 1, "result: at_most needs a number or a list, got 'Hello!"),
]


@pytest.mark.parametrize(("of", "kind", "holds", "fails", "message"), CASES)
async def test_each_check_holds_and_fails(
    of: str, kind: str, holds: Any, fails: Any, message: str
) -> None:
    if kind == "at_most" and of == "result":  # a check that cannot apply never holds
        assert (await _check(of, **{kind: holds}))[0].startswith("result: at_most needs")
    else:
        assert await _check(of, **{kind: holds}) == []
    (failure,) = await _check(of, **{kind: fails})
    assert failure.startswith(message), failure


async def test_a_missing_output_or_binding_names_the_ones_there() -> None:
    assert await _check("output.summary", equals="x") == [
        "output.summary: the run has no output `summary` (its outputs: raw, report)"
    ]
    assert await _check("binding.final", equals="x") == [
        "binding.final: the run has no binding `final` (its bindings: draft)"
    ]
    no_result = Observed(status="succeeded")
    found = await check_expectation(Expectation("result", (("equals", "x"),), 1), no_result, None)
    assert found == ["result: the run has no result (a program with outputs: use `output.NAME`)"]


async def test_several_checks_of_one_expectation_each_report() -> None:
    assert await _check("sessions", at_least=4, at_most=2) == [
        "sessions: expected at least 4, got 3",
        "sessions: expected at most 2, got 3",
    ]


async def test_judged_asks_the_judge_with_the_value_and_the_criterion() -> None:
    asked: list[tuple[str, str]] = []

    async def judge(text: str, criterion: str) -> tuple[bool, str]:
        asked.append((text, criterion))
        return "b.py" in text, "b.py is missing" if "b.py" not in text else "names both"

    holds = Expectation("result", (("judged", "the answer names every file"),), 3)
    assert await check_expectation(holds, SEEN, judge) == []
    fails = Expectation("binding.draft", (("judged", "the draft names every file"),), 3)
    assert await check_expectation(fails, SEEN, judge) == [
        (
            "binding.draft: the evaluator judged **the draft names every file** false: b.py is "
            "missing; the value: 'first draft'"
        )
    ]
    assert asked == [
        ("Hello! The files are a.py and b.py.", "the answer names every file"),
        ("first draft", "the draft names every file"),
    ]


async def test_judged_without_an_evaluator_fails() -> None:
    assert await _check("result", judged="it greets") == [
        "result: cannot judge **it greets**: no evaluator for this case"
    ]
