from __future__ import annotations

import doctest

import pytest

import vpp.conversation
from vpp import Conversation, initial_state, validate_transcript
from vpp.versions import ESCAPE_HINTS, Version


@pytest.mark.parametrize("version", ["1.4", "1.5"])
def test_formatted_replies_make_a_compliant_transcript(version: Version) -> None:
    chat = Conversation(version)
    users = ["!<g>", "!<o>", "!<c>", "!<o>", "!<c>", "!<o>", "!<c>", "!<e> --<q>", "!<x>"]
    turns = []
    for user in users:
        body = "Assumptions: none." if user == "!<e_o>" else f"Reply to {user}."
        turns += [
            {"role": "user", "content": user},
            {"role": "assistant", "content": chat.reply(user, body)},
        ]
    result = validate_transcript(turns, version)
    assistant_bad = [t for t in result.turns if t.role == "assistant" and not t.ok]
    assert assistant_bad == []
    assert result.final_state == chat.state


def test_reply_adds_escape_choices_and_recovery() -> None:
    chat = Conversation("1.5")
    for user in ["!<o>", "!<c>", "!<o>", "!<c>", "!<o>"]:
        chat.reply(user, "x")
    assert ESCAPE_HINTS["1.5"] in chat.reply("!<c>", "Critique.")
    recovery = chat.reply("!<e>", "ignored")
    assert "missing-pipeline-destination" in recovery and "ignored" not in recovery


def test_check_moves_the_state_and_expect_does_not() -> None:
    chat = Conversation("1.4")
    plan = chat.expect("!<q>")
    assert chat.state == initial_state("1.4") and plan.reply_tag == "q"
    result = chat.check("!<q>", "<o>\nwrong")
    assert not result.ok and chat.state.count("q") == 1


def test_reply_refuses_a_tag_the_mirror_rule_forbids() -> None:
    with pytest.raises(ValueError):
        Conversation("1.4").reply("!<q>", "x", tag="o")
    with pytest.raises(ValueError):
        Conversation("1.5", state=initial_state("1.4"))


def test_1_4_reply_can_choose_a_corrected_o_and_name_the_locus() -> None:
    chat = Conversation("1.4")
    chat.reply("!<o>", "draft", locus="pricing")
    message = chat.reply("!<o> --incorrect", "fixed draft", tag="o")
    assert message.startswith("<o>\n") and "Tag=o_2" in message and "Locus=pricing" in message


def test_docstring_example() -> None:
    assert doctest.testmod(vpp.conversation).failed == 0
