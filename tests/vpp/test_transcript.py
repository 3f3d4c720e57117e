from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.vpp.test_cli import _FUZZ_LINES
from vpp import TranscriptError, read_transcript, validate_transcript, write_transcript

TEXT = """Notes before the first turn are ignored.

User: !<q>
What is VPP?

ASSISTANT: <q>
Questions.
[Version=v1.4 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]

user:
!<o>
"""


def test_plain_text_turns_roles_and_lines() -> None:
    transcript = read_transcript(TEXT)
    assert transcript.format == "text"
    assert [(m.role, m.line) for m in transcript.messages] == [
        ("user", 3),
        ("assistant", 6),
        ("user", 11),
    ]
    assert transcript.messages[0].content == "!<q>\nWhat is VPP?"
    assert transcript.messages[2].content == "!<o>"
    assert transcript.messages[1].file_line(3) == 8


def test_plain_text_round_trips_its_turns() -> None:
    transcript = read_transcript(TEXT)
    again = read_transcript(write_transcript(transcript))
    assert [(m.role, m.content) for m in again.messages] == [
        (m.role, m.content) for m in transcript.messages
    ]
    assert write_transcript(transcript).startswith("Notes before")
    assert "ASSISTANT: <q>" in write_transcript(transcript)


def test_json_array_lines_and_extra_keys() -> None:
    text = '[\n  {"role": "system", "content": "be brief"},\n  {"role": "user", "content": "!<q>", "id": 7}\n]'
    transcript = read_transcript(text)
    assert transcript.format == "json"
    assert [m.line for m in transcript.messages] == [2, 3]
    assert json.loads(write_transcript(transcript))[1] == {
        "role": "user",
        "content": "!<q>",
        "id": 7,
    }


def test_json_object_with_messages_is_kept_wrapped() -> None:
    text = json.dumps({"model": "m", "messages": [{"role": "user", "content": "!<g>"}]}, indent=1)
    transcript = read_transcript(text)
    assert transcript.messages[0].line == 4
    assert json.loads(write_transcript(transcript))["model"] == "m"


def test_jsonl() -> None:
    text = '{"role": "user", "content": "!<g>"}\n\n{"role": "assistant", "content": "<g>"}\n'
    transcript = read_transcript(text)
    assert transcript.format == "jsonl"
    assert [m.line for m in transcript.messages] == [1, 3]
    assert write_transcript(transcript) == (
        '{"role": "user", "content": "!<g>"}\n{"role": "assistant", "content": "<g>"}\n'
    )


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("no markers here", 1, "no turns"),
        ('[{"role": "user", "content": "x"},\n {"role": "robot", "content": "y"}]', 2, "robot"),
        ('[{"role": "user", "content": 3}]', 1, "string"),
        ('[{"role": "user",\n "content": ]', 2, "invalid JSON"),
        ('{"role": "user", "content": "x"}\n{"role": \n', 2, "invalid JSON line"),
        ('{"messages": 3}', 1, "messages"),
        ("[1]", 1, "object"),
        ("[]", 1, "no user or assistant messages"),
        ('{"messages": []}', 1, "no user or assistant messages"),
        ('{"role": "system", "content": "be brief"}\n', 1, "no user or assistant messages"),
        ("System: be brief\n", 1, "no user or assistant messages"),
    ],
)
def test_bad_transcripts_name_the_line(text: str, line: int, fragment: str) -> None:
    with pytest.raises(TranscriptError) as caught:
        read_transcript(text)
    assert caught.value.line == line
    assert fragment in str(caught.value)


def test_a_single_json_object_is_one_line_of_jsonl() -> None:
    transcript = read_transcript('{"role": "user", "content": "!<g>"}')
    assert transcript.format == "jsonl" and transcript.messages[0].content == "!<g>"


def test_json_lines_are_counted_across_multiline_contents() -> None:
    turns = [{"role": "user", "content": "!<q>\n" * 3}, {"role": "assistant", "content": "x"}]
    text = json.dumps(turns, indent=2)
    starts = [n for n, line in enumerate(text.split("\n"), 1) if line.strip() == "{"]
    assert [m.line for m in read_transcript(text).messages] == starts


@settings(max_examples=150)
@given(st.text(max_size=200))
def test_reading_never_fails_other_than_with_a_located_error(text: str) -> None:
    try:
        transcript = read_transcript(text)
    except TranscriptError as error:
        assert error.line >= 1
    else:
        assert all(m.role in ("user", "assistant", "system") for m in transcript.messages)


def test_blanks_after_the_marker_are_not_content() -> None:
    transcript = read_transcript("User:   !<q>\nAssistant:\t<q>")
    assert [m.content for m in transcript.messages] == ["!<q>", "<q>"]


def test_plain_text_is_written_back_exactly_as_read() -> None:
    for text in (TEXT, "User:   !<q>\nAssistant:\t<q>", "pre\n\n\nUser:\n!<g>\n\n\n"):
        assert write_transcript(read_transcript(text)) == text


FOOTER = "[Version=v1.5 | Tag=g_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]"


@pytest.mark.parametrize(
    "frame", ["# Locus jump", "## Next", "```", "```text", "~~~", "---", "***", "___", "- - -"]
)
def test_markdown_framing_after_a_footer_is_commentary(frame: str) -> None:
    text = f"```text\nUSER: !<g>\nASSISTANT: <g>\nbody\n{FOOTER}\n\n{frame}\nProse.\n\nUSER: !<q>\n"
    transcript = read_transcript(text)
    assert transcript.messages[1].content == f"<g>\nbody\n{FOOTER}"
    assert transcript.messages[1].after == ("", frame, "Prose.", "")
    assert transcript.preamble == ("```text",)
    assert write_transcript(transcript) == text


@pytest.mark.parametrize(
    "content",
    [
        f"<o>\n# Heading in the body\nText.\n{FOOTER}",  # a heading before the footer
        f"<g>\nbody\n{FOOTER}\nThanks!",  # plain text after the footer is still content
        f"<g>\nbody\n{FOOTER}\n\n#hashtag",  # not a Markdown heading
        f"<g>\nbody\n{FOOTER}\n--",  # not a thematic break
    ],
)
def test_content_that_is_not_framing_stays_in_the_turn(content: str) -> None:
    transcript = read_transcript(f"User: !<g>\nAssistant: {content}\n")
    assert transcript.messages[1].content == content


def test_framing_is_only_cut_from_assistant_turns() -> None:
    text = f"User: !<g>\n{FOOTER}\n# note\nAssistant: <g>\n"
    assert read_transcript(text).messages[0].content == f"!<g>\n{FOOTER}\n# note"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FUZZ_LINES), max_size=14))
@example(["```", "[10:42] User: !<q>", "```"])  # fence lines around text turns were dropped
def test_a_text_transcript_is_written_back_as_read_whatever_its_markers(lines: list[str]) -> None:
    text = "\n".join(lines)
    try:
        transcript = read_transcript(text)
    except TranscriptError as error:
        assert error.line >= 1
        return
    if transcript.format == "text":
        assert write_transcript(transcript) == text


@pytest.mark.parametrize(
    ("user", "assistant"),
    [
        ("Human:", "Assistant:"),
        ("H:", "A:"),
        ("User:", "Model:"),
        ("User:", "AI:"),
        ("You said:", "ChatGPT said:"),
        ("**You:**", "**Claude:**"),
        ("Me:", "GPT-4o:"),
        ("Prompt:", "Response:"),
    ],
)
def test_speaker_names_people_and_tools_write(user: str, assistant: str) -> None:
    text = f"{user} !<g>\n{assistant}\n<g>\nbody\n[Version=v1.4 | Tag=g_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=x]\n"
    transcript = read_transcript(text)
    assert [(m.role, m.line) for m in transcript.messages] == [("user", 1), ("assistant", 3)]
    assert write_transcript(transcript) == text


def test_once_the_speakers_are_named_other_names_are_content() -> None:
    # `A:` in a User/Assistant transcript, `User:` in a Human/AI one: lines of the turn.
    text = "User: !<q>\nAssistant: <q>\nA: one\nHuman: two\nQ?\n[Version=v1.4 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=x]\n"
    assert [m.role for m in read_transcript(text).messages] == ["user", "assistant"]
    other = "Human: !<q>\nAI: <q>\nUser: one\n[Version=v1.4 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=x]\n"
    assert read_transcript(other).messages[1].content.count("\n") == 2


@pytest.mark.parametrize(
    ("message", "says"),
    [
        ({"role": "narrator", "content": "x"}, "message 1 has role 'narrator'; expected user"),
        ({"content": "x"}, "message 1 has no role; expected user"),
        ({"type": "message", "content": "x"}, "message 1 has no role"),
        ({"role": "user", "content": 5}, "message 1 content must be a string or a list"),
        ({"from": "human", "value": None}, "message 1 value must be a string or a list"),
        ({"role": "user", "parts": [{"text": 3}]}, "message 1 parts must be a string"),
    ],
)
def test_json_messages_that_hold_no_turn_say_which_and_why(
    message: dict[str, object], says: str
) -> None:
    with pytest.raises(TranscriptError) as raised:
        read_transcript(json.dumps([message]))
    assert says in str(raised.value)


def test_an_empty_turn_is_located_at_its_marker() -> None:
    text = "User: !<g>\nAssistant:\nUser:\n\nAssistant: <c>\n"
    assert [(m.role, m.content, m.line) for m in read_transcript(text).messages] == [
        ("user", "!<g>", 1),
        ("assistant", "", 2),
        ("user", "", 3),
        ("assistant", "<c>", 5),
    ]
    assert write_transcript(read_transcript(text)) == text


def test_a_q_and_a_list_in_a_message_is_text_when_the_speakers_have_word_names() -> None:
    footer = "[Version=v1.4 | Tag=g_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=x]"
    text = f"User: !<g>\nFormat:\nQ: question\nA: answer\nAssistant: <g>\nQ: x\nA: y\n{footer}\n"
    transcript = read_transcript(text)
    assert [(m.role, m.line) for m in transcript.messages] == [("user", 1), ("assistant", 5)]
    assert validate_transcript(text).ok
    # `System:` is still skipped; `Tool:` in a reply is the reply's text.
    tooled = f"User: !<g>\nAssistant: <g>\nTool: a hammer\n{footer}\nSystem: be brief\n"
    assert [m.role for m in read_transcript(tooled).messages] == ["user", "assistant", "system"]
