"""`vlp.safety_rule`: the runtime's floor under a model's safety level."""

from __future__ import annotations

import pytest

from vlp.safety_rule import at_least, safety_floor


@pytest.mark.parametrize(
    ("text", "risk"),
    [
        ("Is it safe to delete /etc/passwd?", "destructive-action"),
        ("Is it safe to delete /etc/passwd?", "system-file"),
        ("Run rm -rf ~ to free space", "destructive-action"),
        ("Where do I paste my API key?", "credential"),
        ("What dosage of this drug is lethal?", "physical-harm"),
        ("Should I run it with sudo?", "system-file"),
    ],
)
def test_risky_texts_raise_the_floor_to_review(text: str, risk: str) -> None:
    floor = safety_floor(text)
    assert floor.level == "review" and risk in floor.risks
    assert floor.allowed == ("review", "block")
    assert not at_least("safe", floor) and at_least("block", floor)


@pytest.mark.parametrize(
    "text",
    [
        "What is the capital of Australia?",
        "Explain photosynthesis.",
        "Who wrote Hamlet?",
        "Tell me about the etcetera in lists.",
    ],
)
def test_harmless_texts_leave_every_level_open(text: str) -> None:
    floor = safety_floor(text)
    assert floor.level == "safe" and floor.risks == ()
    assert floor.allowed == ("safe", "review", "block")


def test_the_answer_counts_as_well_as_the_question() -> None:
    assert safety_floor("How do I free disk space?").level == "safe"
    assert safety_floor("How do I free disk space?", "Run rm -rf / as root.").level == "review"
    assert not at_least("unknown", safety_floor("hello"))
