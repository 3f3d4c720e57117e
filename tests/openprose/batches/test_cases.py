"""Reading a batch's cases: JSON Lines and CSV, line numbers, what is invalid."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprose.batches.cases import Case, CasesError, Invalid, count_cases, read_cases


def test_jsonl_cases_keep_their_file_line_and_json_types(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text('{"a": [1, 2]}\n\n  \n{"a": "x"}\r\nnot json\n3\nnull\n{"a": {"b": true}}')
    cases = list(read_cases(path))
    assert cases[0] == Case(1, {"a": [1, 2]})
    assert cases[1] == Case(4, {"a": "x"})
    assert isinstance(cases[2], Invalid) and cases[2].line == 5 and "invalid JSON" in cases[2].error
    assert cases[3] == Invalid(6, "expected a JSON object of inputs, got int")
    assert cases[4] == Invalid(7, "expected a JSON object of inputs, got null")
    assert cases[5] == Case(8, {"a": {"b": True}})  # last line without a newline
    assert count_cases(path) == 6


def test_csv_cases_count_lines_from_the_header(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('topic,tone\nowls,dry\n"multi\nline",warm\n\nonly-one-field\ncats,"a, b"\n')
    cases = list(read_cases(path))
    assert cases == [
        Case(2, {"topic": "owls", "tone": "dry"}),
        Case(3, {"topic": "multi\nline", "tone": "warm"}),
        Invalid(6, "1 field(s) where the header names 2"),
        Case(7, {"topic": "cats", "tone": "a, b"}),
    ]
    assert count_cases(path) == 4


def test_csv_header_must_name_distinct_inputs(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text("a,a\n1,2\n")
    with pytest.raises(CasesError, match="distinct"):
        list(read_cases(path))


def test_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CasesError, match="not a regular file"):
        read_cases(Path("/dev/zero"))
    with pytest.raises(CasesError, match="no such file"):
        read_cases(tmp_path / "missing.jsonl")


def test_an_overlong_line_is_one_invalid_case_not_a_memory_hog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openprose.batches.cases as cases_module

    monkeypatch.setattr(cases_module, "MAX_LINE_BYTES", 64)
    path = tmp_path / "in.jsonl"
    path.write_text('{"a": "' + "x" * 500 + '"}\n{"a": 1}\n')
    assert list(read_cases(path)) == [Invalid(1, "line longer than 64 bytes"), Case(2, {"a": 1})]
    assert count_cases(path) == 2


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lines=st.lists(
        st.sampled_from(['{"a": 1}', "", "  ", "\t", "not json", "[1]", '{"a": "\u00e9"}', "\r"]),
        max_size=12,
    ),
    ending=st.sampled_from(["\n", "\r\n"]),
    last_newline=st.booleans(),
)
def test_the_progress_total_counts_what_read_cases_yields(
    tmp_path: Path, lines: list[str], ending: str, last_newline: bool
) -> None:
    # count_cases skips parsing the lines: it must still agree with read_cases
    path = tmp_path / "in.jsonl"
    path.write_bytes((ending.join(lines) + (ending if last_newline else "")).encode())
    assert count_cases(path) == len(list(read_cases(path)))
