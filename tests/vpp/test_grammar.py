from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpp import ASSISTANT_TAGS, USER_TAGS, parse_command, recovery_body
from vpp.grammar import Command
from vpp.versions import Version

BOTH: tuple[Version, ...] = ("1.4", "1.5")


def codes(command: Command) -> list[str]:
    return [problem.code for problem in command.errors]


# 1.4 §II mirror table, row by row (identical in 1.5).
@pytest.mark.parametrize("version", BOTH)
@pytest.mark.parametrize(
    ("line", "reply"),
    [
        ("!<g>", "g"),
        ("!<q>", "q"),
        ("!<c>", "c"),
        ("!<o>", "o"),
        ("!<o_f>", "o_f"),
        ("!<e> --<g>", "g"),
        ("!<e_o>", "o"),
    ],
)
def test_mirror_table(line: str, reply: str, version: Version) -> None:
    command = parse_command(line, version)
    assert command.ok
    assert command.reply_tag == reply


# 1.4 §III, row by row: the reply tags each (command, modifier) row allows.
MODIFIER_TABLE_1_4 = [
    # --incorrect
    ("!<q> --incorrect", ("q",)),
    ("!<c> --incorrect", ("c",)),
    ("!<o> --incorrect", ("c", "o")),  # <c> first, or a corrected <o>
    ("!<g> --incorrect", ("g",)),
    ("!<o_f> --incorrect", ("c",)),
    ("!<e> --<q> --incorrect", ("q",)),
    ("!<e_o> --incorrect", ("o",)),
    # severity
    ("!<c> --minor", ("c",)),
    ("!<c> --major", ("c",)),
    ("!<q> --major", ("q",)),
    # --correct
    ("!<q> --correct", ("q",)),
    ("!<c> --correct", ("c",)),
    ("!<g> --correct", ("g",)),
    ("!<o> --correct --<q>", ("q",)),
    ("!<o> --correct", ("o",)),
    ("!<o_f> --correct", ("o_f",)),
    ("!<e> --<c> --correct", ("c",)),
    ("!<e_o> --correct", ("o",)),
    # conflict handling: <c> failure
    ("!<q> --correct --incorrect", ("c",)),
]


@pytest.mark.parametrize(("line", "allowed"), MODIFIER_TABLE_1_4)
def test_modifier_table_1_4(line: str, allowed: tuple[str, ...]) -> None:
    assert parse_command(line, "1.4").reply_tags == allowed


@pytest.mark.parametrize(
    ("line", "reply"),
    [
        ("!<o> --incorrect", "c"),
        ("!<o_f> --incorrect", "c"),
        ("!<o> --correct --<o_f>", "o_f"),
        ("!<q> --incorrect --major", "q"),
    ],
)
def test_transitions_1_5(line: str, reply: str) -> None:
    assert parse_command(line, "1.5").reply_tags == (reply,)


@pytest.mark.parametrize("version", BOTH)
@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("", "invalid-first-line"),
        ("hello !<q>", "invalid-first-line"),
        (" !<q>", "invalid-first-line"),
        ("!<Q>", "invalid-first-line"),
        ("!q", "invalid-first-line"),
        ("!<x>", "unknown-tag"),
        ("!<q> --minor --minor", "duplicate-modifier"),
        ("!<e> --<g> --<g>", "duplicate-modifier"),
        ("!<q> --correct --incorrect", "conflicting-correctness"),
        ("!<q> --minor --major", "conflicting-severity"),
        ("!<e> --<g> --<q>", "multiple-pipeline-destinations"),
        ("!<e>", "missing-pipeline-destination"),
        ("!<e> --minor", "missing-pipeline-destination"),
        ("!<e> --<e>", "invalid-pipeline-destination"),
        ("!<e> --<x>", "invalid-pipeline-destination"),
        ("!<q> --<g>", "pipeline-not-allowed"),
        ("!<o> --<g>", "pipeline-not-allowed"),
        ("!<o> --incorrect --<g>", "pipeline-not-allowed"),
        ("!<e_o> --<g>", "pipeline-not-allowed"),
        ("!<q> --fast", "invalid-modifier"),
        ("!<q> --Correct", "invalid-modifier"),
    ],
)
def test_command_errors(line: str, code: str, version: Version) -> None:
    command = parse_command(line, version)
    assert not command.ok
    assert codes(command)[0] == code
    assert command.reply_tags == ("c",)


@pytest.mark.parametrize(
    ("line", "code_1_4", "code_1_5"),
    [
        ("!<q> what is this?", "text-after-command", "invalid-modifier"),
        ("!<o> --correct --q", "unbracketed-pipeline", "invalid-modifier"),
        ("!<o> --assumptions=x", "invalid-modifier", "invalid-modifier"),
        ("!<o> --assumptions=1 --assumptions=2", "duplicate-modifier", "invalid-modifier"),
    ],
)
def test_version_specific_codes(line: str, code_1_4: str, code_1_5: str) -> None:
    assert codes(parse_command(line, "1.4"))[0] == code_1_4
    assert codes(parse_command(line, "1.5"))[0] == code_1_5


def test_assumptions_modifier_is_1_4_only() -> None:
    command = parse_command("!<o> --assumptions=2", "1.4")
    assert command.ok and command.assumptions == 2
    assert not parse_command("!<o> --assumptions=2", "1.5").ok


def test_text_after_command_stops_at_first_word_and_points_at_it() -> None:
    command = parse_command("!<q> --minor please help", "1.4")
    assert codes(command) == ["text-after-command"]
    assert command.errors[0].column == len("!<q> --minor ") + 1


def test_error_columns_point_at_the_token() -> None:
    command = parse_command("!<q> --minor --fast", "1.5")
    assert command.errors[0].column == 14


@pytest.mark.parametrize("line", ["!<g>--minor", "!<q>x", "!<o>--<g>"])
def test_1_4_needs_a_space_between_the_tag_and_what_follows(line: str) -> None:
    command = parse_command(line, "1.4")
    assert codes(command) == ["invalid-first-line"] and command.reply_tag == "c"
    assert "a space must separate the tag" in command.errors[0].message
    assert parse_command(line.replace(">", "> ", 1), "1.4").tag == line[2]


@pytest.mark.parametrize(
    ("line", "expected", "reply"),
    [
        ("!<g>--minor", [], "g"),
        ("!<e>--<q>", [], "q"),
        ("!<o>--correct --<g>", [], "g"),
        ("!<q>x", ["invalid-modifier"], "c"),
        ("!<o>--<g>", ["pipeline-not-allowed"], "c"),
    ],
)
def test_1_5_reads_tokens_right_after_the_tag(line: str, expected: list[str], reply: str) -> None:
    # The v1.5 runtime matches `^!<tag>(.*)$` and splits the rest into tokens.
    command = parse_command(line, "1.5")
    assert codes(command) == expected and command.reply_tag == reply


@pytest.mark.parametrize("version", BOTH)
def test_only_line_one_is_parsed(version: Version) -> None:
    command = parse_command("!<q>\n!<o> --correct --<g>\n!<x>", version)
    assert command.ok and command.tag == "q" and command.destination is None
    assert parse_command("please\r\n!<q>", version).errors[0].code == "invalid-first-line"


@pytest.mark.parametrize("version", BOTH)
def test_modifier_order_and_trailing_space_do_not_matter(version: Version) -> None:
    a = parse_command("!<o> --<q> --correct --minor ", version)
    b = parse_command("!<o> --minor --correct --<q>", version)
    assert a.ok and b.ok and a.reply_tag == b.reply_tag == "q"
    assert set(a.modifiers) == set(b.modifiers) == {"correct", "minor"}


# 1.4 §I's "Regex (reference, for line 1 only)", verbatim.
PRINTED_REGEX_1_4 = re.compile(
    r"^!<(g|q|o|c|o_f|e|e_o)>(?:\s+--(?:correct|incorrect|minor|major|g|q|o|c|o_f|e|e_o))\s$"
)


def test_spec_regex_rejects_lines_the_grammar_accepts() -> None:
    # The printed regex needs exactly one modifier, one trailing whitespace character and
    # unbracketed pipeline tags; the prose, module 01 and every example say otherwise.
    for line in ("!<g>", "!<o> --correct --<q>", "!<q> --correct --minor", "!<e> --<g>"):
        assert PRINTED_REGEX_1_4.match(line) is None
        assert parse_command(line, "1.4").ok
    # Where the regex does match, the prose decides: `--q` must be written `--<q>`.
    assert PRINTED_REGEX_1_4.match("!<o> --q ")
    assert [p.code for p in parse_command("!<o> --q ", "1.4").errors] == ["unbracketed-pipeline"]
    assert PRINTED_REGEX_1_4.match("!<q> --major ") and parse_command("!<q> --major ", "1.4").ok


def test_recovery_body_1_5_is_fixed() -> None:
    command = parse_command("!<g> --correct --incorrect", "1.5")
    assert recovery_body(command) == (
        "Invalid VPP command (conflicting-correctness): --correct and --incorrect are "
        "mutually exclusive. Example: !<g> --incorrect"
    )
    example = recovery_body(command).rsplit("Example: ", 1)[1]
    assert parse_command(example, "1.5").ok


modifier_tokens = st.sampled_from(
    ["--correct", "--incorrect", "--minor", "--major", *(f"--<{t}>" for t in USER_TAGS)]
)


@settings(max_examples=150)
@given(
    tag=st.sampled_from(USER_TAGS),
    tokens=st.lists(modifier_tokens, max_size=4),
    version=st.sampled_from(BOTH),
)
def test_generated_commands_are_valid_exactly_when_the_rules_say(
    tag: str, tokens: list[str], version: Version
) -> None:
    command = parse_command(" ".join([f"!<{tag}>", *tokens]), version)
    destinations = [t[3:-1] for t in tokens if t.startswith("--<")]
    flags = [t[2:] for t in tokens if not t.startswith("--<")]
    expected_ok = (
        len(set(flags)) == len(flags)
        and not {"correct", "incorrect"} <= set(flags)
        and not {"minor", "major"} <= set(flags)
        and len(destinations) <= 1
        and all(d in ASSISTANT_TAGS for d in destinations)
        and (tag != "e" or len(destinations) == 1)
        and (not destinations or tag == "e" or (tag == "o" and "correct" in flags))
    )
    assert command.ok == expected_ok
    assert command.reply_tag in ASSISTANT_TAGS
    if command.ok and destinations:
        assert command.reply_tag == destinations[0]


@settings(max_examples=200)
@given(st.text(max_size=60), st.sampled_from(BOTH))
def test_parser_never_crashes_and_reports_precisely(text: str, version: Version) -> None:
    command = parse_command(text, version)
    assert command.ok == (not command.errors and command.tag is not None)
    for problem in command.errors:
        assert problem.code and problem.message and problem.column >= 1
        if version == "1.4" or command.tag != "e":  # 1.5 quotes its runtime's `!<e> --minor`
            assert parse_command(problem.example, version).ok
