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


def test_end_to_end_example_is_flagged_at_its_critique() -> None:
    # The file as published: its `# Locus jump` heading is commentary, not reply text.
    result = validate_transcript((EXAMPLES / "end-to-end.md").read_text(), "1.4")
    bad = [
        (t.index, t.role, [(v.code, v.line) for v in t.violations])
        for t in result.turns
        if not t.ok
    ]
    assert bad == [(8, "assistant", [("footer-cycle-mismatch", 16)])]


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
