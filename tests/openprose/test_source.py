"""Reading a program file (`openprose.source`): the text, or `Unreadable` saying where and why."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from pathlib import Path

import pytest

from openprose.source import (
    PROGRAM_LIMIT,
    Span,
    Unreadable,
    decode_program,
    new_span,
    read_program,
)


def test_a_utf8_file_reads_with_its_bom_dropped(tmp_path: Path) -> None:
    path = tmp_path / "main.prose"
    path.write_bytes(b'\xef\xbb\xbfsession "hi"\n')
    source = read_program(path)
    assert source.text == 'session "hi"\n'
    assert source.path == str(path)


def test_a_missing_file_is_e118_at_its_start(tmp_path: Path) -> None:
    with pytest.raises(Unreadable) as raised:
        read_program(tmp_path / "absent.prose")
    assert raised.value.code == "E118"
    assert raised.value.message == "Cannot read file: no such file or directory"
    assert (raised.value.span.line, raised.value.span.column) == (1, 1)


def test_a_bad_byte_is_e100_at_that_byte() -> None:
    with pytest.raises(Unreadable) as raised:
        decode_program(b'session "a"\nlet \xff = 1\n', "main.prose")
    problem = raised.value
    assert problem.code == "E100"
    assert "byte 0xff at offset 16" in problem.message
    assert (problem.span.line, problem.span.column) == (2, 5)
    assert problem.path == "main.prose"


def test_more_than_the_limit_is_refused() -> None:
    with pytest.raises(Unreadable, match="larger than the 64 MiB limit"):
        decode_program(b" " * (PROGRAM_LIMIT + 1))


def test_new_span_is_the_span_the_constructor_makes() -> None:
    made, built = new_span(3, 9, 1, 4, 2, 1), Span(3, 9, 1, 4, 2, 1)
    assert type(made) is Span
    assert made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert copy.deepcopy(made) == built
    assert dataclasses.replace(made, end=10) == Span(3, 10, 1, 4, 2, 1)
    assert made.cover(Span(0, 4, 1, 1, 1, 5)) == Span(0, 9, 1, 1, 2, 1)


def test_new_span_is_frozen() -> None:
    made = new_span(0, 1, 1, 1, 1, 2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.start = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del made.end  # type: ignore[misc]
    assert made == Span(0, 1, 1, 1, 1, 2)
