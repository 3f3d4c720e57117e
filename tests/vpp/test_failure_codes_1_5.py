"""Every code of VPP v1.5's failure table, produced with the table's own name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.vpp.conftest import make_reply
from tests.vpp.test_validate import state_after
from vpp import ConversationState, build_footer, expect, initial_state, validate_exchange
from vpp.audit import validate_transcript
from vpp.state import StateError
from vpp.validate import STRUCTURAL_BODY, format_reply
from vpp.versions import ESCAPE_HINTS

TABLE = Path("/work/shared/reference/vpp/v1.5/failure-codes.md")
# The table's rows, in its order (`*-mismatch` spelled out per footer field).
TABLE_CODES = [
    "invalid-first-line",
    "unknown-tag",
    "invalid-modifier",
    "duplicate-modifier",
    "conflicting-correctness",
    "conflicting-severity",
    "multiple-pipeline-destinations",
    "missing-pipeline-destination",
    "invalid-pipeline-destination",
    "pipeline-not-allowed",
    "invalid-state-*",
    "missing-or-invalid-header",
    "missing-or-malformed-footer",
    "*-mismatch",
    "nested-header",
    "nested-footer",
    "missing-escape-options",
    "recovery-body-mismatch",
]
MISMATCHES = ["version-mismatch", "tag-mismatch", "cycle-mismatch", "locus-mismatch"]

COMMAND_ERRORS = {
    "invalid-first-line": "please help",
    "unknown-tag": "!<x>",
    "invalid-modifier": "!<q>x",
    "duplicate-modifier": "!<q> --minor --minor",
    "conflicting-correctness": "!<g> --correct --incorrect",
    "conflicting-severity": "!<q> --major --minor",
    "multiple-pipeline-destinations": "!<e> --<g> --<q>",
    "missing-pipeline-destination": "!<e>",
    "invalid-pipeline-destination": "!<e> --<x>",
    "pipeline-not-allowed": "!<g> --<q>",
}


def test_the_list_is_the_published_table() -> None:
    if not TABLE.exists():
        pytest.skip(f"{TABLE} is not on this machine")
    codes = re.findall(r"^\| `([^`]+)`(?:, `([^`]+)`)? \|", TABLE.read_text(), re.MULTILINE)
    assert [code for pair in codes for code in pair if code] == TABLE_CODES[:14] + [
        "nested-header",
        "nested-footer",
        "missing-escape-options",
        "recovery-body-mismatch",
    ]


@pytest.mark.parametrize(("code", "user"), sorted(COMMAND_ERRORS.items()))
def test_each_command_error_is_answered_by_its_recovery_body(code: str, user: str) -> None:
    plan = expect(user, initial_state("1.5"))
    assert plan.reply_tag == "c" and plan.recovery_body is not None
    assert f"({code})" in plan.recovery_body
    good = make_reply("c", 1, version="1.5", body=plan.recovery_body)
    result = validate_exchange(user, good, initial_state("1.5"))
    # 1.5: an invalid command is a normal path; the user's error is information.
    assert result.ok and result.command_violations[0].code == code
    wrong = make_reply("c", 1, version="1.5", body="Sorry, I did not understand.")
    assert [v.code for v in validate_exchange(user, wrong, initial_state("1.5")).violations] == [
        "recovery-body-mismatch"
    ]


def test_invalid_state_codes() -> None:
    good = initial_state("1.5").to_dict()
    for broken in ({**good, "cycle": 9}, {**good, "version": "2.0"}, {"cycle": 1}):
        with pytest.raises(StateError) as caught:
            ConversationState.from_dict(broken)
        assert caught.value.code.startswith("invalid-state-")


def codes(user: str, assistant: str, state: ConversationState | None = None) -> list[str]:
    result = validate_exchange(user, assistant, state or initial_state("1.5"))
    return [v.code for v in result.violations]


FOOTER = "[Version=v1.5 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]"


@pytest.mark.parametrize(
    ("assistant", "code"),
    [
        ("Body.\n" + FOOTER, "missing-or-invalid-header"),
        ("<q>\nBody.", "missing-or-malformed-footer"),
        ("<q>\nBody.\n" + FOOTER.replace("v1.5", "v1.4"), "version-mismatch"),
        ("<q>\nBody.\n" + FOOTER.replace("q_1", "q_2"), "footer-tag-mismatch"),
        ("<q>\nBody.\n" + FOOTER.replace("1/3", "2/3"), "cycle-mismatch"),
        ("<q>\nBody.\n" + FOOTER.replace("default", "research"), "locus-mismatch"),
        ("<q>\n<q>\nBody.\n" + FOOTER, "nested-header"),
        ("<q>\n" + FOOTER + "\nBody.\n" + FOOTER, "nested-footer"),
        ("<q>\n" + FOOTER, "empty-body"),
        ("<q>\n\n   \n" + FOOTER, "empty-body"),
    ],
)
def test_each_reply_failure_has_the_table_name(assistant: str, code: str) -> None:
    assert codes("!<q>", assistant) == [code]


def test_1_4_mode_keeps_its_footer_names() -> None:
    footer = FOOTER.replace("v1.5", "v1.4").replace("q_1", "q_2")
    found = codes("!<q>", "<q>\nBody.\n" + footer, initial_state("1.4"))
    assert found == ["footer-tag-mismatch"]


def test_missing_escape_options_when_the_third_cycle_closes() -> None:
    state = state_after(["!<o>", "!<c>", "!<o>", "!<c>", "!<o>"], "1.5")
    plan = expect("!<c>", state)
    bare = make_reply("c", plan.tag_index(), cycle=3, version="1.5")
    assert codes("!<c>", bare, state) == ["missing-escape-options"]
    hinted = make_reply("c", plan.tag_index(), cycle=3, version="1.5", body=ESCAPE_HINTS["1.5"])
    assert codes("!<c>", hinted, state) == []


def test_an_empty_body_is_repaired_with_the_fixed_structural_body() -> None:
    result = validate_exchange("!<q>", "<q>\n" + FOOTER, initial_state("1.5"), repair=True)
    assert result.repaired == f"<q>\n{STRUCTURAL_BODY}\n{FOOTER}"
    assert validate_exchange("!<q>", result.repaired, initial_state("1.5")).ok


def test_a_recovery_transcript_is_valid_in_1_5_and_notes_the_users_error() -> None:
    body = expect("!<q> --major --minor", initial_state("1.5")).recovery_body
    assert body is not None
    reply = format_reply(expect("!<q> --major --minor", initial_state("1.5")), "ignored")
    turns = [
        {"role": "user", "content": "!<q> --major --minor"},
        {"role": "assistant", "content": reply},
    ]
    result = validate_transcript(turns, "1.5")
    assert result.ok
    assert [n.code for n in result.turns[0].notes] == ["conflicting-severity"]
    assert json.dumps(result.as_dict())  # the notes are in the JSON report
    assert not validate_transcript(turns, "1.4").ok  # 1.4 keeps the user's error a violation
    assert body in reply and build_footer("c", 1, cycle=1, locus="default", version="1.5") in reply
