"""Every join strategy against every on-fail policy (issue 20, items 12-13).

"The first successful result wins. Other branches are cancelled." A failed branch is never
the value of a race; race losers and ignored failures reach later sessions as notes."""

from __future__ import annotations

from typing import Any

import pytest

ERROR = "session error at"  # how an error value (`continue`) reads in a prompt
FAILED = "(failed: "  # an ignored failure
CANCELLED = "(cancelled)"


def _rule(match: str, seconds: float, answer: str = "", fails: bool = False) -> dict[str, Any]:
    return {
        "match": match,
        "answer": answer or "unused",
        "latency_ms": seconds * 1000,
        "failures": ["error"] * (5 if fails else 0),
    }


SCENARIOS = {
    # a fast branch that fails, a slow one that succeeds
    "fast failure": [_rule("^Branch A", 0.01, fails=True), _rule("^Branch B", 0.08, "slow")],
    # a fast success, a slow success
    "fast success": [_rule("^Branch A", 0.01, "fast"), _rule("^Branch B", 0.3, "slow")],
    "all fail": [_rule("^Branch A", 0.01, fails=True), _rule("^Branch B", 0.02, fails=True)],
}

FAIL = "failed"
# (join, on-fail, scenario) -> the run's status, the block's value and what `a` / `b` read as.
TABLE: dict[tuple[str, str, str], tuple[str, Any, str, str]] = {
    ("all", "fail-fast", "fast failure"): (FAIL, None, "", ""),
    ("all", "continue", "fast failure"): ("succeeded", {"a": ERROR, "b": "slow"}, ERROR, "slow"),
    ("all", "ignore", "fast failure"): ("succeeded", {"b": "slow"}, FAILED, "slow"),
    ("first", "fail-fast", "fast failure"): (FAIL, None, "", ""),
    ("first", "continue", "fast failure"): ("succeeded", "slow", ERROR, "slow"),
    ("first", "ignore", "fast failure"): ("succeeded", "slow", FAILED, "slow"),
    ("any", "fail-fast", "fast failure"): (FAIL, None, "", ""),
    ("any", "continue", "fast failure"): ("succeeded", {"b": "slow"}, ERROR, "slow"),
    ("any", "ignore", "fast failure"): ("succeeded", {"b": "slow"}, FAILED, "slow"),
    **{
        ("all", policy, "fast success"): ("succeeded", {"a": "fast", "b": "slow"}, "fast", "slow")
        for policy in ("fail-fast", "continue", "ignore")
    },
    **{
        ("first", policy, "fast success"): ("succeeded", "fast", "fast", CANCELLED)
        for policy in ("fail-fast", "continue", "ignore")
    },
    **{
        ("any", policy, "fast success"): ("succeeded", {"a": "fast"}, "fast", CANCELLED)
        for policy in ("fail-fast", "continue", "ignore")
    },
    ("all", "fail-fast", "all fail"): (FAIL, None, "", ""),
    ("all", "continue", "all fail"): ("succeeded", {"a": ERROR, "b": ERROR}, ERROR, ERROR),
    ("all", "ignore", "all fail"): ("succeeded", {}, FAILED, FAILED),
    ("first", "fail-fast", "all fail"): (FAIL, None, "", ""),
    ("first", "continue", "all fail"): (FAIL, "all 2 branches failed", "", ""),
    ("first", "ignore", "all fail"): ("succeeded", "(failed: no branch succeeded", FAILED, FAILED),
    ("any", "fail-fast", "all fail"): (FAIL, None, "", ""),
    ("any", "continue", "all fail"): (FAIL, "all 2 branches failed", "", ""),
    ("any", "ignore", "all fail"): ("succeeded", {}, FAILED, FAILED),
}


def _matches(actual: Any, expected: Any) -> bool:
    """Strings in `expected` are prefixes (error texts carry locations); dicts match by key."""
    if isinstance(expected, dict):
        return (
            isinstance(actual, dict)
            and actual.keys() == expected.keys()
            and all(_matches(actual[k], v) for k, v in expected.items())
        )
    if isinstance(actual, dict) and "error" in actual:  # an error value in outputs.json
        actual = f"{actual['kind']} error at {actual['where']}: {actual['error']}"
    return isinstance(actual, str) and actual.startswith(expected)


def test_the_table_covers_every_join_and_policy() -> None:
    joins, policies = ("all", "first", "any"), ("fail-fast", "continue", "ignore")
    assert set(TABLE) == {(j, p, s) for j in joins for p in policies for s in SCENARIOS}


@pytest.mark.parametrize(("join", "policy", "scenario"), list(TABLE))
def test_join_strategy_and_on_fail_policy(vm: Any, join: str, policy: str, scenario: str) -> None:
    status, value, a_reads, b_reads = TABLE[(join, policy, scenario)]
    provider = vm.spy(SCENARIOS[scenario])
    source = f"""let r = parallel ("{join}", on-fail: "{policy}"):
  a = session "Branch A"
  b = session "Branch B"
session "After"
  context: {{ a, b }}
output out = r
"""
    result = vm.run(source, provider)
    assert result.status == status, result.error
    if status == FAIL:
        assert provider.sent("^After") == []
        assert value is None or value in (result.error or "")
        return
    assert _matches(result.outputs["out"], value), result.outputs
    after = provider.sent("^After")[0].last_user_text()
    assert f"### a\n{a_reads}" in after and f"### b\n{b_reads}" in after


def test_race_losers_reach_later_sessions_as_cancelled(vm: Any) -> None:
    # The case: "any" of four with count 2, then all four names in context.
    provider = vm.spy(
        [
            _rule("^Branch A", 0.01, "one"),
            _rule("^Branch B", 0.02, "two"),
            _rule("^Branch C", 5.0, "three"),
            _rule("^Branch D", 5.0, "four"),
        ]
    )
    source = """parallel ("any", count: 2):
  a = session "Branch A"
  b = session "Branch B"
  c = session "Branch C"
  d = session "Branch D"
session "Combine"
  context: { a, b, c, d }
"""
    result = vm.run(source, provider)
    assert result.status == "succeeded", result.error
    combine = provider.sent("^Combine")[0].last_user_text()
    for expected in ("### a\none", "### b\ntwo", "### c\n(cancelled)", "### d\n(cancelled)"):
        assert expected in combine
    assert (result.run_dir / "bindings" / "c.md").read_text().rstrip().endswith("(cancelled)")


def test_parallel_for_races_say_when_every_item_failed(vm: Any) -> None:
    def failing() -> Any:
        return vm.spy([_rule("^Item", 0.0, fails=True)])

    source = """let got = parallel ("first", on-fail: "{policy}") for i in [1, 2, 3]:
  session "Item {{i}}"
output got = got
"""
    failed = vm.run(source.format(policy="continue"), failing())
    assert failed.status == "failed"
    assert "needed 1 successful item(s), got 0: all 3 items failed (item 1: " in (
        failed.error or ""
    )
    ignored = vm.run(source.format(policy="ignore"), failing())
    assert ignored.status == "succeeded"
    assert ignored.outputs == {"got": "(failed: no item succeeded (3 failed))"}
