from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpp import ASSISTANT_TAGS, ConversationState, Expectation, StateError, expect, initial_state
from vpp.versions import Version

SPEC = Path("/work/shared/reference/vpp")


def run(commands: list[str], version: Version = "1.5") -> list[Expectation]:
    state: ConversationState = initial_state(version)
    plans = []
    for command in commands:
        plan = expect(command, state)
        plans.append(plan)
        state = plan.next_state()
    return plans


def footers(plans: list[Expectation]) -> list[tuple[str, int, int, str]]:
    return [(p.reply_tag, p.tag_index(), p.cycle, p.locus) for p in plans]


def test_1_5_indices_are_per_tag_and_global() -> None:
    plans = run(["!<g>", "!<q>", "!<g>", "!<e> --<g>", "!<q>"])
    assert [f"{t}_{i}" for t, i, _, _ in footers(plans)] == ["g_1", "q_1", "g_2", "g_3", "q_2"]


def test_1_5_unnamed_jumps_are_numbered_and_named_jumps_keep_their_name() -> None:
    plans = run(["!<g>", "!<e> --<g>", "!<q>", "!<e> --<o>"])
    assert [p.locus for p in plans] == ["default", "locus-2", "locus-2", "locus-3"]
    state = plans[-1].next_state()
    named = expect("!<e> --<q>", state, new_locus="pricing")
    assert named.locus == "pricing" and named.after.locus_index == 4
    with pytest.raises(ValueError):
        expect("!<e> --<q>", state, new_locus="bad|name")


def test_1_5_critique_closes_the_cycle_and_the_next_command_opens_the_next() -> None:
    plans = run(["!<g>", "!<o>", "!<c>", "!<o>", "!<c>", "!<o>", "!<c>", "!<o>", "!<c>"])
    assert [p.cycle for p in plans] == [1, 1, 1, 2, 2, 3, 3, 3, 3]
    assert [p.escape_due for p in plans] == [False] * 6 + [True, False, True]


@pytest.mark.parametrize("restart", ["!<e> --<g>", "!<e_o>", "!<o> --correct --<q>"])
def test_1_5_restarts_begin_at_cycle_1_without_resetting_counts(restart: str) -> None:
    plans = run(["!<o>", "!<c>", "!<o>", "!<c>", restart])
    assert plans[3].cycle == 2
    assert plans[4].cycle == 1
    assert plans[4].tag_index() == plans[4].before.count(plans[4].reply_tag) + 1
    expected_locus = "locus-2" if restart.startswith("!<e>") else "default"
    assert plans[4].locus == expected_locus


def test_1_5_a_command_after_o_f_restarts_the_cycle() -> None:
    plans = run(["!<o>", "!<c>", "!<o_f>", "!<q>"])
    assert [p.cycle for p in plans] == [1, 1, 2, 1]
    plans = run(["!<o>", "!<c>", "!<o_f> --incorrect", "!<q>"])  # <c> reply: loop still open
    assert [p.cycle for p in plans] == [1, 1, 2, 2]


def test_1_5_only_a_user_c_closes_a_cycle() -> None:
    plans = run(["!<o>", "!<o> --incorrect", "!<o>"])  # <c> replies, but no !<c> command
    assert [p.cycle for p in plans] == [1, 1, 1]


@pytest.mark.parametrize("version", ["1.4", "1.5"])
def test_invalid_commands_get_c_recovery_and_keep_cycle_and_locus(version: Version) -> None:
    state = run(["!<o>", "!<c>", "!<e> --<q>"], version)[-1].next_state()
    plan = expect("!<q> --minor --major", state)
    assert plan.reply_tag == "c" and plan.recovery_body is not None
    assert "conflicting-severity" in plan.recovery_body
    assert plan.tag_index() == state.count("c") + 1
    after = plan.next_state()
    assert (after.cycle, after.locus, after.cycle_closed) == (
        state.cycle,
        state.locus,
        state.cycle_closed,
    )
    assert after.count("c") == state.count("c") + 1


def test_1_4_rejections_advance_the_cycle_and_surface_escapes_on_the_third() -> None:
    plans = run(
        ["!<o>", "!<c> --incorrect", "!<o>", "!<c> --incorrect", "!<o>", "!<o> --incorrect"],
        "1.4",
    )
    assert [p.cycle for p in plans] == [1, 2, 2, 3, 3, 3]
    assert [p.escape_due for p in plans] == [False] * 5 + [True]


def test_1_4_acceptance_resets_the_unaccepted_streak_but_not_the_cycle() -> None:
    plans = run(
        ["!<o>", "!<c> --incorrect", "!<o> --incorrect", "!<q> --correct", "!<c> --incorrect"],
        "1.4",
    )
    assert [p.cycle for p in plans] == [1, 2, 3, 3, 3]
    assert not any(p.escape_due for p in plans)


def test_1_4_plain_critique_does_not_advance_the_cycle() -> None:
    assert [p.cycle for p in run(["!<o>", "!<c>", "!<o>", "!<c>"], "1.4")] == [1, 1, 1, 1]


def test_1_4_o_incorrect_allows_a_corrected_o() -> None:
    plan = run(["!<o>", "!<o> --incorrect"], "1.4")[-1]
    assert plan.reply_tags == ("c", "o")
    assert plan.tag_index("o") == 2 and plan.tag_index("c") == 1
    assert plan.next_state("o").count("o") == 2
    with pytest.raises(ValueError):
        plan.next_state("q")


def test_1_4_indices_are_conversation_global_not_per_locus() -> None:
    # §VIII says `_n` counts "within the current locus"; end-to-end.md shows `g_2` right
    # after `!<e> --<g>` and the sample transcript reaches `o_5` across two jumps.
    plans = run(["!<g>", "!<q>", "!<e> --<g>", "!<q>", "!<o> --correct --<g>"], "1.4")
    assert [f"{p.reply_tag}_{p.tag_index()}" for p in plans] == [
        "g_1",
        "q_1",
        "g_2",
        "q_2",
        "g_3",
    ]
    assert plans[2].locus == "locus-2"


def test_1_4_locus_names_from_replies_are_carried() -> None:
    plan = run(["!<g>"], "1.4")[0]
    assert plan.next_state("g", "research").locus == "research"
    assert run(["!<g>"], "1.5")[0].next_state("g", "research").locus == "default"


def _spec_exchanges(path: Path) -> list[tuple[str, tuple[str, int, int]]]:
    text = path.read_text()
    users = re.findall(r"^User: (.*)$", text, re.MULTILINE)
    tags = re.findall(r"Tag=(\w+?)_(\d+) \| .*? \| Cycle=(\d)/3", text)
    return [(u, (t, int(i), int(c))) for u, (t, i, c) in zip(users, tags, strict=True)]


def test_1_4_sample_transcript_follows_the_resolved_rules() -> None:
    exchanges = _spec_exchanges(SPEC / "v1.4/examples/sample-transcript-1.md")
    plans = run([user for user, _ in exchanges], "1.4")
    assert [(t, i, c) for t, i, c, _ in footers(plans)] == [want for _, want in exchanges]


def test_1_4_end_to_end_example_disagrees_only_on_the_critique_cycle() -> None:
    exchanges = _spec_exchanges(SPEC / "v1.4/examples/end-to-end.md")
    got = [(t, i, c) for t, i, c, _ in footers(run([u for u, _ in exchanges], "1.4"))]
    differing = [n for n, (mine, (_, spec)) in enumerate(zip(got, exchanges)) if mine != spec]
    assert differing == [3]  # its `!<c>` shows Cycle=2/3; see docs/decisions.md, VPP


valid_commands = st.sampled_from(
    [
        "!<g>",
        "!<q>",
        "!<o>",
        "!<c>",
        "!<o_f>",
        "!<e_o>",
        "!<q> --incorrect",
        "!<c> --incorrect",
        "!<o> --incorrect",
        "!<o_f> --incorrect",
        "!<q> --correct",
        "!<o> --correct",
        "!<o_f> --correct",
        "!<c> --minor",
        "!<g> --major",
        *(f"!<e> --<{t}>" for t in ASSISTANT_TAGS),
        *(f"!<o> --correct --<{t}>" for t in ASSISTANT_TAGS),
    ]
)


@settings(max_examples=150)
@given(
    commands=st.lists(valid_commands, max_size=25),
    version=st.sampled_from(["1.4", "1.5"]),
    choices=st.lists(st.booleans(), min_size=25, max_size=25),
)
def test_any_valid_sequence_yields_a_consistent_history(
    commands: list[str], version: Version, choices: list[bool]
) -> None:
    state = initial_state(version)
    seen: dict[str, int] = dict.fromkeys(ASSISTANT_TAGS, 0)
    for command, pick_last in zip(commands, choices):
        plan = expect(command, state)
        assert plan.command.ok
        tag = plan.reply_tags[-1] if pick_last else plan.reply_tag
        # indices: per tag, conversation-global, consecutive
        assert plan.tag_index(tag) == seen[tag] + 1
        seen[tag] += 1
        after = plan.next_state(tag)
        assert all(after.count(t) == seen[t] for t in ASSISTANT_TAGS)
        # cycle stays in 1..3 and either restarts at 1, stays, or advances by one
        assert 1 <= after.cycle <= 3
        restarted = (
            command.startswith(("!<e>", "!<e_o>", "!<o> --correct --<")) or state.loop_closed
        )
        if restarted:
            assert after.cycle == 1
        else:
            assert after.cycle in (state.cycle, min(3, state.cycle + 1))
        # locus changes exactly on a locus jump, to the next generic name
        if command.startswith("!<e> "):
            assert after.locus_index == state.locus_index + 1
            assert after.locus == f"locus-{after.locus_index}"
        else:
            assert (after.locus_index, after.locus) == (state.locus_index, state.locus)
        # escape hint only at cycle 3, on a critique (1.5) or a rejection (1.4)
        if plan.escape_due:
            assert after.cycle == 3
            assert command.startswith("!<c>") if version == "1.5" else "--incorrect" in command
        assert after.loop_closed == (tag == "o_f")
        state = after


@settings(max_examples=100)
@given(commands=st.lists(valid_commands, max_size=15), version=st.sampled_from(["1.4", "1.5"]))
def test_state_round_trips_through_its_dict_form(commands: list[str], version: Version) -> None:
    state = initial_state(version)
    for command in commands:
        state = expect(command, state).next_state()
    carried = json.loads(json.dumps(state.to_dict()))
    assert ConversationState.from_dict(carried) == state


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"extra": 1}, "invalid-state-shape"),
        ({"version": "1.3"}, "invalid-state-version"),
        ({"cycle": 4}, "invalid-state-cycle"),
        ({"cycle": True}, "invalid-state-cycle"),
        ({"locus": "bad|name"}, "invalid-state-locus"),
        ({"locus": "-x"}, "invalid-state-locus"),
        ({"locus_index": 0}, "invalid-state-locus"),
        ({"tag_counts": {"g": 1}}, "invalid-state-tag-counts"),
        ({"tag_counts": {"g": -1, "q": 0, "o": 0, "c": 0, "o_f": 0}}, "invalid-state-tag-counts"),
        ({"cycle_closed": "yes"}, "invalid-state-flags"),
        ({"cycle_closed": True}, "invalid-state-flags"),  # no <c> reply yet
        ({"loop_closed": True}, "invalid-state-flags"),  # no <o_f> reply yet
        ({"unaccepted": 2}, "invalid-state-unaccepted"),  # 1.5 does not count rejections
    ],
)
def test_invalid_client_state_is_refused_with_a_code(change: dict[str, object], code: str) -> None:
    data = initial_state("1.5").to_dict() | change
    with pytest.raises(StateError) as caught:
        ConversationState.from_dict(data)
    assert caught.value.code == code
