from __future__ import annotations

from pathlib import Path

import pytest

from vpp import expect, initial_state, validate_transcript, write_transcript

EXAMPLES = Path("/work/shared/reference/vpp/v1.4/examples")
TRANSCRIPTS_1_5 = Path("/work/shared/reference/vpp/v1.5/transcripts.md")


def test_spec_sample_transcript_is_compliant_in_1_4() -> None:
    result = validate_transcript((EXAMPLES / "sample-transcript-1.md").read_text(), "1.4")
    assert result.ok, result.violations
    assert len(result.turns) == 28
    assert result.final_state.count("o") == 5


def test_end_to_end_example_is_compliant_as_published() -> None:
    # Its `# Locus jump` heading is commentary, not reply text; its plain `!<c>` answered at
    # Cycle=2/3 is one of the two readings 1.4's examples give (docs/decisions.md, VPP).
    result = validate_transcript((EXAMPLES / "end-to-end.md").read_text(), "1.4")
    assert result.ok, [(t.index, t.violations) for t in result.turns if not t.ok]


def _turns(*pairs: tuple[str, str, int]) -> str:
    lines: list[str] = []
    seen: dict[str, int] = {}
    for command, tag, cycle in pairs:
        seen[tag] = n = seen.get(tag, 0) + 1
        lines += [f"User: {command}", f"Assistant: <{tag}>", "body"]
        lines.append(
            f"[Version=v1.4 | Tag={tag}_{n} | Sources=none | Assumptions=0 "
            f"| Cycle={cycle}/3 | Locus=x]"
        )
        lines.append("")
    return "\n".join(lines)


def test_a_plain_critique_may_show_this_cycle_or_the_next_and_that_value_carries() -> None:
    stays = _turns(("!<c>", "c", 1), ("!<c>", "c", 1))
    advances = _turns(("!<c>", "c", 2), ("!<c>", "c", 3))
    assert validate_transcript(stays, "1.4").ok and validate_transcript(advances, "1.4").ok
    skipped = validate_transcript(_turns(("!<c>", "c", 3)), "1.4", from_start=True)
    assert [v.code for t in skipped.turns for v in t.violations] == ["footer-cycle-mismatch"]
    # once shown, the next cycle is where the conversation is: a later reply must agree
    back = validate_transcript(_turns(("!<c>", "c", 2), ("!<q>", "q", 1)), "1.4")
    assert [v.code for t in back.turns for v in t.violations] == ["footer-cycle-mismatch"]
    # only a plain `!<c>`, and only in 1.4
    query = validate_transcript(_turns(("!<q>", "q", 2)), "1.4", from_start=True)
    assert [v.code for t in query.turns for v in t.violations] == ["footer-cycle-mismatch"]


def test_1_5_global_counters_transcript() -> None:
    text = """USER: !<g>
ASSISTANT: <g>
...body...
[Version=v1.5 | Tag=g_1 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=default]

USER: !<e> --<g>
ASSISTANT: <g>
...body...
[Version=v1.5 | Tag=g_2 | Sources=none | Assumptions=0 | Cycle=1/3 | Locus=locus-2]
"""
    assert validate_transcript(text, "1.5").ok
    assert not validate_transcript(text.replace("g_2", "g_1"), "1.5").ok


def test_1_5_representative_transcripts_file_is_compliant_as_published() -> None:
    text = TRANSCRIPTS_1_5.read_text()
    result = validate_transcript(text, "1.5")
    assert result.ok, result.violations
    assert [t.role for t in result.turns] == ["user", "assistant"] * 2
    assert not validate_transcript(text, "1.4").ok  # its footers say v1.5


def test_turns_from_mappings_and_structure_problems() -> None:
    turns = [
        {"role": "system", "content": "VPP"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "!<q>"},
        {"role": "user", "content": "!<x>"},
    ]
    result = validate_transcript(turns, "1.5")
    assert [(t.index, t.role, [v.code for v in t.violations]) for t in result.turns] == [
        (2, "assistant", ["unexpected-assistant-turn"]),
        (3, "user", ["missing-assistant-turn"]),
        (4, "user", ["unknown-tag", "missing-assistant-turn"]),
    ]


def test_repair_produces_a_compliant_transcript_in_the_same_format() -> None:
    turns = [
        {"role": "user", "content": "!<g>"},
        {"role": "assistant", "content": "Concepts.\n[Version=v1.5 | Tag=<g> | Sources=none]"},
        {"role": "user", "content": "!<o> --correct --<q>"},
        {"role": "assistant", "content": "<o>\nQuestions?"},
    ]
    result = validate_transcript(turns, "1.5", repair=True)
    assert not result.ok and result.repaired is not None
    repaired = write_transcript(result.repaired)
    again = validate_transcript(repaired, "1.5")
    assert again.ok, again.violations
    assert "Concepts." in repaired and "Questions?" in repaired


def test_state_continues_with_the_expected_transition_after_a_wrong_reply() -> None:
    turns = [
        {"role": "user", "content": "!<q>"},
        {"role": "assistant", "content": "<o>\nwrong"},
        {"role": "user", "content": "!<q>"},
    ]
    result = validate_transcript(turns, "1.4")
    assert result.final_state.count("q") == 1 and result.final_state.count("o") == 0
    assert expect("!<q>", result.final_state).tag_index() == 2


def test_version_of_given_state_must_match() -> None:
    with pytest.raises(ValueError):
        validate_transcript([], "1.5", state=initial_state("1.4"))


def test_a_1_5_transcript_takes_the_name_a_jump_s_reply_gives_its_locus() -> None:
    def reply(tag: str, index: int, locus: str) -> str:
        return (
            f"<{tag}>\nbody\n[Version=v1.5 | Tag={tag}_{index} | Sources=none | Assumptions=0"
            f" | Cycle=1/3 | Locus={locus}]"
        )

    turns = [
        {"role": "user", "content": "!<g>"},
        {"role": "assistant", "content": reply("g", 1, "default")},
        {"role": "user", "content": "!<e> --<q>"},
        {"role": "assistant", "content": reply("q", 1, "pricing")},
        {"role": "user", "content": "!<g>"},
        {"role": "assistant", "content": reply("g", 2, "pricing")},
    ]
    assert validate_transcript(turns, "1.5").ok
    # The name is carried: a later reply must keep it.
    drifted = [*turns[:5], {"role": "assistant", "content": reply("g", 2, "billing")}]
    codes = [v.code for t in validate_transcript(drifted, "1.5").turns for v in t.violations]
    assert codes == ["locus-mismatch"]
    # A jump must open a new locus; a numbered name must be the right number.
    for wrong in ("default", "locus-3"):
        kept = [*turns[:3], {"role": "assistant", "content": reply("q", 1, wrong)}]
        codes = [v.code for t in validate_transcript(kept, "1.5").turns for v in t.violations]
        assert codes == ["locus-mismatch"], wrong
