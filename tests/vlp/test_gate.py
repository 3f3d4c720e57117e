"""Gating: block halts downstream, review holds, everything else proceeds."""

from __future__ import annotations

from typing import Any

from tests.vlp.conftest import base
from vlp import Problem, Verdict, gate


def test_clean_thread_proceeds() -> None:
    result = gate([base(id="A"), base(id="B", type="response", refers_to="A")])
    assert result.verdict is Verdict.PROCEED and result.proceed
    assert result.causes == [] and result.verdict.exit_code == 0


def test_review_holds_the_message_and_what_refers_to_it(dialogue: list[dict[str, Any]]) -> None:
    dialogue.append(base(id="MSG006", type="response", refers_to="MSG004"))
    dialogue.append(base(id="MSG007"))
    result = gate(dialogue)
    assert result.verdict is Verdict.HOLD and result.verdict.exit_code == 3
    assert [(c.id, c.verdict) for c in result.causes] == [("MSG004", Verdict.HOLD)]
    assert "off_brand_tone" in result.causes[0].reason
    assert result.held == ["MSG004", "MSG006"]


def test_block_halts_everything_downstream() -> None:
    messages = [
        base(id="A"),
        base(id="B", type="notice", safety={"level": "block", "issues": [{"code": "pii_leak"}]}),
        base(id="C"),
        base(id="D", type="notice", safety={"level": "review"}, confidence=0.5),
    ]
    result = gate(messages)
    assert result.verdict is Verdict.HALT and result.verdict.exit_code == 4
    assert result.halted == ["B", "C", "D"]
    assert [c.id for c in result.causes if c.verdict is Verdict.HALT] == ["B"]
    assert "pii_leak" in result.causes[0].reason


def test_block_halts_even_when_the_message_is_invalid() -> None:
    result = gate([base(id="A"), {"id": "X", "safety": {"level": "block"}}])
    assert result.verdict is Verdict.HALT and result.halted == ["X"]


def test_invalid_unreadable_and_human_flags_hold() -> None:
    assert gate([base(confidence=0.99)]).verdict is Verdict.HOLD
    assert gate([base(safety={"level": "safe", "requires_human": True})]).verdict is Verdict.HOLD
    assert gate([base(context_metrics={"context_integrity": 0.5})]).verdict is Verdict.HOLD
    assert gate([base(context_metrics={"context_integrity": 0.9})]).verdict is Verdict.PROCEED
    unreadable = [Problem("VLP001", "invalid JSON", 3)]
    result = gate([base()], unreadable=unreadable)
    assert result.verdict is Verdict.HOLD and result.causes[0].line == 3


def test_a_correction_does_not_lift_a_block() -> None:
    messages = [
        base(id="A", safety={"level": "block"}),
        base(id="C", type="correction", refers_to="A", safety={"level": "safe"}),
    ]
    assert gate(messages).verdict is Verdict.HALT


def test_correction_cycle_holds() -> None:
    messages = [
        base(id="C1", type="correction", refers_to="C2"),
        base(id="C2", type="correction", refers_to="C1"),
    ]
    result = gate(messages)
    assert result.verdict is Verdict.HOLD and "cycle" in result.causes[0].reason


def test_causes_carry_the_messages_that_caused_them() -> None:
    blocker = base(id="B", type="notice", safety={"level": "block"})
    reviewer = base(id="R", type="notice", safety={"level": "review"}, confidence=0.5)
    cycle = [
        base(id="C1", type="correction", refers_to="C2"),
        base(id="C2", type="correction", refers_to="C1"),
    ]
    result = gate([base(id="A"), reviewer, blocker, *cycle])
    by_id = {cause.id: cause for cause in result.causes}
    assert by_id["B"].message is blocker and by_id["B"].index == 2
    assert by_id["R"].message is reviewer and by_id["R"].index == 1
    assert by_id["C1"].message is cycle[0] and by_id["C1"].index == 3
