"""VPP transcripts as people, chat exports and models write them (docs/decisions.md,
"Conformance (protocol transcripts)").

transcripts/ holds the seed's two example exchanges as printed (the second also inside the
conversation it comes from) and our own conversations in the 1.4 and 1.5 shapes. Each is
fed through the spellings real tools produce, and `vpp check` / `vpp repair` must agree
that nothing is wrong (or name the one thing that is, with its fix).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cliconventions.test_four_clis import run
from vpp import initial_state, validate_exchange, validate_transcript
from vpp.transcript import read_transcript, write_transcript
from vpp.versions import Version

HERE = Path(__file__).with_name("transcripts")
VERSIONS: list[Version] = ["1.4", "1.5"]


def _vpp(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run("vpp", *args, stdin=stdin)


def _turns(text: str) -> list[dict[str, str]]:
    transcript = read_transcript(text)
    return [{"role": m.role, "content": m.content} for m in transcript.messages]


def _markers(text: str, user: str, assistant: str) -> str:
    return (
        text.replace("USER: ", user)
        .replace("User: ", user)
        .replace("ASSISTANT: ", assistant)
        .replace("Assistant: ", assistant)
    )


TEXT_VARIANTS: dict[str, Callable[[str], str]] = {
    "as written": lambda t: t,
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "bom": lambda t: "\ufeff" + t,
    "trailing spaces": lambda t: t.replace("\n", "  \n"),
    "trailing tabs": lambda t: t.replace("\n", "\t\n"),
    "no blank lines": lambda t: t.replace("\n\n", "\n"),
    "many blank lines": lambda t: t.replace("\n\n", "\n\n\n\n"),
    "no final newline": lambda t: t.rstrip("\n"),
    "markers on their own line": lambda t: _markers(t, "User:\n", "Assistant:\n"),
    "bold markers": lambda t: _markers(t, "**User:** ", "**Assistant:** "),
    "bold markers, colon outside": lambda t: _markers(t, "**User**: ", "**Assistant**: "),
    "heading markers": lambda t: _markers(t, "## User\n\n", "## Assistant\n\n"),
    "heading markers with colon": lambda t: _markers(t, "### User:\n", "### Assistant:\n"),
    "whole transcript fenced": lambda t: "```text\n" + t + "```\n",
    "json": lambda t: json.dumps(_turns(t), ensure_ascii=False, indent=2),
    "json, fenced": lambda t: "```json\n" + json.dumps(_turns(t), indent=2) + "\n```\n",
    "json, roles capitalised": lambda t: json.dumps(
        [{**m, "role": m["role"].capitalize()} for m in _turns(t)]
    ),
    "json, content as text parts": lambda t: json.dumps(
        {
            "messages": [
                {"role": m["role"], "content": [{"type": "text", "text": m["content"]}]}
                for m in _turns(t)
            ]
        }
    ),
    "json, extra keys first": lambda t: json.dumps(
        [
            {"id": n, "name": "x", "content": m["content"], "role": m["role"]}
            for n, m in enumerate(_turns(t))
        ]
    ),
    "jsonl, crlf": lambda t: "".join(json.dumps(m) + "\r\n" for m in _turns(t)),
    # Speaker names other tools and people write (session 13).
    "Human/Assistant": lambda t: _markers(t, "Human: ", "Assistant: "),
    "H/A": lambda t: _markers(t, "H: ", "A: "),
    "User/Model": lambda t: _markers(t, "User: ", "Model: "),
    "User/AI, crlf": lambda t: _markers(t, "User: ", "AI: ").replace("\n", "\r\n"),
    "You/ChatGPT said (chat copy)": lambda t: _markers(t, "You said:\n", "ChatGPT said:\n"),
    "bold You/Claude": lambda t: _markers(t, "**You:** ", "**Claude:** "),
    "heading Human/GPT-4o": lambda t: _markers(t, "## Human\n\n", "## GPT-4o\n\n"),
    "json, sharegpt": lambda t: json.dumps(
        {
            "id": "x",
            "conversations": [
                {"from": {"user": "human", "assistant": "gpt"}[m["role"]], "value": m["content"]}
                for m in _turns(t)
            ],
        }
    ),
    "json, gemini contents": lambda t: json.dumps(
        {
            "contents": [
                {
                    "role": {"user": "user", "assistant": "model"}[m["role"]],
                    "parts": [{"text": m["content"]}],
                }
                for m in _turns(t)
            ]
        }
    ),
    "json, claude export": lambda t: json.dumps(
        {
            "uuid": "u",
            "chat_messages": [
                {
                    "sender": {"user": "human", "assistant": "assistant"}[m["role"]],
                    "text": m["content"],
                    "content": [{"type": "text", "text": m["content"]}],
                }
                for m in _turns(t)
            ],
        }
    ),
    "json, chatgpt export messages": lambda t: json.dumps(
        [
            {
                "author": {"role": m["role"], "name": None},
                "content": {"content_type": "text", "parts": [m["content"]]},
            }
            for m in _turns(t)
        ]
    ),
    "jsonl, langchain types": lambda t: "".join(
        json.dumps(
            {"type": {"user": "human", "assistant": "ai"}[m["role"]], "content": m["content"]}
        )
        + "\n"
        for m in _turns(t)
    ),
}

CLEAN = {
    "caching_1_4.txt": ("1.4", False),
    "caching_1_5.txt": ("1.5", False),
    "seed_example_1.txt": ("1.4", True),  # its Sources label needs --lenient (earlier decision)
    "seed_example_2_in_context.txt": ("1.4", True),
}


@pytest.mark.parametrize("variant", sorted(TEXT_VARIANTS))
@pytest.mark.parametrize("name", sorted(CLEAN))
def test_every_spelling_of_a_compliant_transcript_is_compliant(
    name: str, variant: str, tmp_path: Path
) -> None:
    version, lenient = CLEAN[name]
    path = tmp_path / "t"
    path.write_bytes(TEXT_VARIANTS[variant]((HERE / name).read_text(encoding="utf-8")).encode())
    args = ["check", "--version", version, *(["--lenient"] if lenient else []), str(path)]
    checked = _vpp(*args)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "compliant" in checked.stdout


@pytest.mark.parametrize(
    "variant",
    [
        "bold markers",
        "heading markers",
        "json, fenced",
        "json, content as text parts",
        "json, roles capitalised",
        "H/A",
        "You/ChatGPT said (chat copy)",
        "json, sharegpt",
        "json, gemini contents",
        "json, claude export",
        "json, chatgpt export messages",
    ],
)
def test_repair_gives_back_a_compliant_file_of_the_same_shape(variant: str, tmp_path: Path) -> None:
    original = TEXT_VARIANTS[variant]((HERE / "caching_1_4.txt").read_text(encoding="utf-8"))
    broken = original.replace("Tag=q_1", "Tag=q_7")
    path = tmp_path / "t"
    path.write_text(broken, encoding="utf-8")
    assert _vpp("check", "--from-start", str(path)).returncode == 1
    repaired = _vpp("repair", "--from-start", str(path))
    assert repaired.returncode == 0, repaired.stderr
    if "json" not in variant:
        assert repaired.stdout == original  # text: only the repaired turn changes
        return
    assert repaired.stdout.startswith("```json\n") == original.startswith("```json\n")
    assert json.loads(repaired.stdout.strip("`json\n")) == json.loads(original.strip("`json\n"))


def test_the_seed_s_second_example_is_a_fragment() -> None:
    # Cycle=2/3 with no earlier cycle in the file: it was cut from a conversation, so
    # it is checked from the state its footer shows, and says so. Read as a whole
    # conversation (--from-start), the cycle is its one problem.
    checked = _vpp("check", "--lenient", str(HERE / "seed_example_2.txt"))
    assert checked.returncode == 0, checked.stdout
    assert "note: inferred-start: The transcript starts mid-conversation" in checked.stdout
    assert "checked from cycle 2/3" in checked.stdout
    whole = _vpp("check", "--lenient", "--from-start", str(HERE / "seed_example_2.txt"))
    assert whole.returncode == 1
    assert "footer-cycle-mismatch: Expected Cycle=1/3." in whole.stdout
    assert whole.stdout.count("turn ") == 1


def test_a_plain_transcript_keeps_bold_body_lines_as_content() -> None:
    text = (
        "User: !<g>\nAssistant: <g>\n**User:** clicks save; **Assistant:** autosaves.\n"
        "[Version=v1.4 | Tag=g_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=ui]\n"
    )
    assert [m.role for m in read_transcript(text).messages] == ["user", "assistant"]
    assert validate_transcript(text).ok


def test_a_heading_that_only_starts_with_a_role_word_is_content() -> None:
    text = "## User\n!<g>\n## User stories\n## Assistant\n<g>\nx\n[Version=v1.4 | Tag=g_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=ui]\n"
    transcript = read_transcript(text)
    assert [m.role for m in transcript.messages] == ["user", "assistant"]
    assert transcript.messages[0].content == "!<g>\n## User stories"


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("tail", [" ", "  ", "\t", " \t "])
def test_trailing_whitespace_after_the_reply_tag_is_not_text(version: Version, tail: str) -> None:
    reply = f"<q>{tail}\nWhich users?\n[Version=v{version} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]"
    assert validate_exchange("!<q>", reply, initial_state(version)).violations == ()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("fence", ["```", "```text", "~~~"])
def test_a_fenced_reply_is_one_problem_that_names_the_fix(version: Version, fence: str) -> None:
    footer = (
        f"[Version=v{version} | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]"
    )
    reply = f"{fence}\n<q>\nWhich users?\n{footer}\n{fence[:3]}"
    result = validate_exchange("!<q>", reply, initial_state(version), repair=True)
    assert [(v.code, v.line) for v in result.violations] == [("missing-or-invalid-header", 1)]
    assert (
        "wrapped in a Markdown code fence; remove the fence lines" in result.violations[0].message
    )
    assert result.repaired == f"<q>\nWhich users?\n{footer}"


def test_text_parts_other_than_text_are_kept_through_a_repair() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}}
    turns = [
        {"role": "user", "content": [{"type": "text", "text": "!<q>"}, image]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "<q>\nWhat is in the picture?\n"},
                {
                    "type": "text",
                    "text": "[Version=v1.4 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=x]",
                },
            ],
        },
    ]
    text = json.dumps(turns)
    assert validate_transcript(text).ok
    assert json.loads(write_transcript(read_transcript(text))) == turns
    broken = text.replace("Tag=q_1", "Tag=q_2")
    report = validate_transcript(broken, repair=True, from_start=True)
    assert not report.ok and report.repaired is not None
    written = json.loads(write_transcript(report.repaired))
    assert written[0] == turns[0]
    assert written[1]["content"] == [
        {
            "type": "text",
            "text": "<q>\nWhat is in the picture?\n[Version=v1.4 | Tag=q_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=x]",
        }
    ]


def test_a_role_that_is_no_role_still_says_which_message() -> None:
    checked = _vpp("check", "-", stdin=json.dumps([{"role": "Narrator", "content": "x"}]))
    assert checked.returncode == 2
    assert "message 1 has role 'Narrator'; expected user or assistant" in checked.stderr


def test_assumptions_may_be_quoted_as_the_seed_s_grammar_writes_values() -> None:
    # value ::= quoted | unquoted (seed BNF); the count is the same either way.
    from vpp import parse_command

    quoted, bare = parse_command('!<o> --assumptions="2"'), parse_command("!<o> --assumptions=2")
    assert quoted.ok and quoted.assumptions == bare.assumptions == 2
    assert quoted.modifiers == bare.modifiers
    assert [e.code for e in parse_command('!<o> --assumptions="two"').errors] == [
        "invalid-modifier"
    ]


def test_repairing_a_fenced_reply_in_a_text_transcript_drops_both_fences() -> None:
    text = (HERE / "caching_1_4.txt").read_text(encoding="utf-8")
    fenced = text.replace("Assistant: <o>\n", "Assistant: ```\n<o>\n").rstrip("\n") + "\n```\n"
    report = validate_transcript(fenced, repair=True)
    assert [(t.index, [v.code for v in t.violations]) for t in report.turns if t.violations] == [
        (6, ["missing-or-invalid-header"])
    ]
    assert report.repaired is not None
    assert write_transcript(report.repaired) == text


_REPLY = "<g>\nx\n[Version=v1.4 | Tag=g_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=ui]"


@pytest.mark.parametrize(
    "document",
    [
        [  # OpenAI chat: a tool call without content, then the tool's answer
            {"role": "user", "content": "!<g>"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function"}]},
            {"role": "tool", "tool_call_id": "1", "content": "result"},
            {"role": "assistant", "content": _REPLY},
        ],
        {  # Anthropic: tool_use, and its result sent back as a user message
            "messages": [
                {"role": "user", "content": "!<g>"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]},
                {"role": "assistant", "content": [{"type": "text", "text": _REPLY}]},
            ]
        },
        {  # Gemini: functionCall / functionResponse parts
            "contents": [
                {"role": "user", "parts": [{"text": "!<g>"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f"}}]},
                {"role": "model", "parts": [{"text": _REPLY}]},
            ]
        },
    ],
    ids=["openai", "anthropic", "gemini"],
)
def test_tool_steps_between_a_command_and_its_reply_are_not_turns(document: object) -> None:
    text = json.dumps(document)
    report = validate_transcript(text)
    assert report.ok, report.violations
    assert [m.role for m in report.transcript.messages] == ["user", "tool", "tool", "assistant"]
    assert json.loads(write_transcript(report.transcript)) == document
