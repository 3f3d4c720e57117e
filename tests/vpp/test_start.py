"""Transcripts cut from the middle of a conversation (vpp.start; docs/decisions.md,
"Conformance (protocols, session 13)")."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.cliconventions.test_four_clis import run
from vpp import Conversation, read_transcript, validate_transcript
from vpp.audit import INFERRED_START
from vpp.versions import Version

REFERENCE = Path("/work/shared/reference/vpp")
HERE = Path(__file__).with_name("transcripts")
COMPLIANT: list[tuple[Path, Version]] = [
    (REFERENCE / "v1.4/examples/sample-transcript-1.md", "1.4"),
    (REFERENCE / "v1.4/examples/end-to-end.md", "1.4"),
    (REFERENCE / "v1.5/transcripts.md", "1.5"),
    (HERE / "caching_1_4.txt", "1.4"),
    (HERE / "caching_1_5.txt", "1.5"),
]
COMMANDS = [
    "!<g>",
    "!<q>",
    "!<o>",
    "!<c>",
    "!<c> --incorrect",
    "!<c> --correct",
    "!<o> --incorrect",
    "!<o> --correct --<q>",
    "!<e> --<g>",
    "!<e_o>",
    "!<o_f>",
    "!<x>",
]


def _turns(path: Path) -> list[dict[str, str]]:
    messages = read_transcript(path.read_text(encoding="utf-8")).messages
    return [{"role": m.role, "content": m.content} for m in messages if m.role != "system"]


def _problems(turns: list[dict[str, str]], version: Version, **options: bool) -> list[str]:
    result = validate_transcript(turns, version, **options)
    return [f"{t.index}: {v.code}" for t in result.turns for v in t.violations]


def _conversation(version: Version, commands: list[str]) -> list[dict[str, str]]:
    chat, turns = Conversation(version), []
    for number, command in enumerate(commands):
        body = "Assumptions: none." if command == "!<e_o>" else f"Reply {number}."
        turns += [
            {"role": "user", "content": command},
            {"role": "assistant", "content": chat.reply(command, body)},
        ]
    return turns


@pytest.mark.parametrize(("path", "version"), COMPLIANT, ids=lambda p: getattr(p, "name", p))
def test_every_excerpt_of_a_compliant_transcript_is_compliant(path: Path, version: Version) -> None:
    turns = _turns(path)
    assert _problems(turns, version, from_start=True) == []
    for start in range(1, len(turns)):
        # Said to be excerpts: in 1.5 a lone exchange is otherwise a whole conversation.
        excerpt = _problems(turns[start:], version, from_start=False)
        assert excerpt == [], f"excerpt from message {start + 1}"


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["1.4", "1.5"]),
    st.lists(st.sampled_from(COMMANDS), min_size=2, max_size=12),
    st.integers(0, 23),
)
# Found by this test (commit a3a22bc): an excerpt opening on the <c> reply to an invalid
# command (which leaves a closed loop closed) was checked as if the loop were open.
@example("1.4", ["!<o_f>", "!<x>", "!<c> --incorrect"], 3)
@example("1.4", ["!<o_f>", "!<x>", "!<o> --incorrect"], 3)
def test_every_excerpt_of_a_generated_conversation_is_compliant(
    version: Version, commands: list[str], start_at: int
) -> None:
    turns = _conversation(version, commands)
    start = start_at % len(turns)  # the excerpt's first message
    # In 1.4 an invalid command (`!<x>`) is the user's violation; the replies are all right.
    found = _problems(turns[start:], version, from_start=False)
    replies = [p for p in found if "unknown-tag" not in p]
    assert replies == []


def test_an_excerpt_says_where_its_check_started() -> None:
    turns = _conversation("1.4", ["!<g>", "!<c> --incorrect", "!<q>", "!<c>", "!<q>"])
    result = validate_transcript(turns[4:], "1.4")
    assert result.ok
    notes = [(t.index, n.code, n.message) for t in result.turns for n in t.notes]
    assert notes[0][:2] == (2, INFERRED_START)
    assert "checked from cycle 2/3, locus 'default', 0 earlier <q> replies" in notes[0][2]
    assert "--from-start" in notes[0][2]
    # The same excerpt read as a whole conversation: its first reply shows a history.
    assert _problems(turns[4:], "1.4", from_start=True) == [
        "2: footer-cycle-mismatch",
        "4: footer-tag-mismatch",
    ]


def test_a_broken_reply_after_the_first_is_still_reported() -> None:
    turns = _conversation("1.5", ["!<g>", "!<q>", "!<c>", "!<q>", "!<g>", "!<q>"])
    excerpt = copy.deepcopy(turns[4:])  # from the `!<c>`: c_1, q_2, g_2, q_3
    excerpt[3]["content"] = excerpt[3]["content"].replace("Tag=q_2", "Tag=q_5")
    excerpt[7]["content"] = excerpt[7]["content"].replace("Tag=q_3", "Tag=q_4")
    # q's first index in the excerpt is taken as given (its earlier count is unknown) ...
    assert _problems(excerpt, "1.5") == ["8: footer-tag-mismatch"]
    # ... and a wrong cycle after the first reply is reported.
    cycled = copy.deepcopy(turns[4:])
    cycled[5]["content"] = cycled[5]["content"].replace("Cycle=2/3", "Cycle=3/3")
    assert _problems(cycled, "1.5") == ["6: cycle-mismatch"]


def test_a_leading_reply_with_a_footer_gives_the_state_it_leaves() -> None:
    turns = _conversation("1.4", ["!<g>", "!<q>", "!<q>", "!<o>"])
    excerpt = turns[3:]  # starts with the reply q_1
    result = validate_transcript(excerpt, "1.4")
    assert result.ok, result.violations
    assert next((t.index, t.role, [n.code for n in t.notes]) for t in result.turns) == (
        1,
        "assistant",
        [INFERRED_START],
    )
    excerpt[2]["content"] = excerpt[2]["content"].replace("Tag=q_2", "Tag=q_1")
    assert _problems(excerpt, "1.4") == ["3: footer-tag-mismatch"]


def test_a_leading_reply_without_a_footer_is_still_unexpected() -> None:
    turns = [{"role": "assistant", "content": "Hello!"}, *_conversation("1.4", ["!<g>"])]
    assert _problems(turns, "1.4") == ["1: unexpected-assistant-turn"]


def test_the_cli_prints_the_note_and_takes_from_start(tmp_path: Path) -> None:
    path = tmp_path / "excerpt.txt"
    path.write_text((HERE / "seed_example_2.txt").read_text(encoding="utf-8"), encoding="utf-8")
    checked = run("vpp", "check", "--lenient", "--format", "json", str(path))
    assert checked.returncode == 0, checked.stdout
    turn = json.loads(checked.stdout)["turns"][1]
    assert turn["ok"] and turn["notes"][0]["code"] == INFERRED_START
    whole = run("vpp", "repair", "--lenient", "--from-start", str(path))
    assert whole.returncode == 0 and "Cycle=1/3" in whole.stdout
    excerpt = run("vpp", "repair", "--lenient", str(path))
    assert "Cycle=2/3" in excerpt.stdout and "repaired 0 assistant turn(s)" in excerpt.stderr
