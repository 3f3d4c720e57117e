"""Records of input and the problems of bad lines: what orjson refused and why (with a
hint for the near misses tools write), repeated keys, schema and rule violations.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from vlp._keyscan import may_repeat_keys
from vlp.duplicates import DuplicateKey, describe, find_duplicate_keys
from vlp.errors import Problem
from vlp.line_reader import is_framing
from vlp.validate import check_message, is_surely_valid

ProblemSink = Callable[[Problem], None]
MessageSink = Callable[[dict[str, Any], int], None]


@dataclass(slots=True)
class Record:
    """One line (NDJSON) or array element (JSON) of input and what was wrong with it."""

    line: int
    message: Any = None
    problems: list[Problem] = field(default_factory=list)
    #: Keys the message's text gives more than once (each also a VLP005 problem): the
    #: parsed ``message`` holds only the last value of each.
    duplicates: list[DuplicateKey] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.message is not None and not self.problems


class Unparsed:
    """Stands in for a line orjson could not parse, until it is reported."""

    __slots__ = ("error",)

    def __init__(self, error: ValueError) -> None:
        # Without its traceback: the frame it names holds this object and the whole batch
        # of lines, a cycle only the garbage collector would free (memory grew per error).
        self.error = error.with_traceback(None)


@dataclass(slots=True)
class ScanSummary:
    """Counts from :func:`scan`: non-blank lines, valid messages, problems reported."""

    messages: int = 0
    valid: int = 0
    problems: int = 0


def json_error(line: int, error: ValueError) -> Problem:
    if isinstance(error, json.JSONDecodeError):  # orjson's error is one too
        return Problem("VLP001", f"invalid JSON at column {error.colno}: {error.msg}", line)
    return Problem("VLP001", f"invalid JSON: {error}", line)


def not_utf8(first_line: int, data: bytes, error: UnicodeDecodeError) -> Problem:
    """VLP001 naming the line and byte where ``data`` (starting on ``first_line``) stops
    being UTF-8."""
    start = error.start
    line_start = data.rfind(b"\n", 0, start) + 1
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:64]
    hint = " (the text looks like UTF-16: save it as UTF-8)" if utf16 else ""
    return Problem(
        "VLP001",
        f"not UTF-8: byte 0x{data[start]:02x} at byte {start - line_start + 1} of the line" + hint,
        first_line + data.count(b"\n", 0, start),
    )


def unparsable(line: int, data: bytes, error: ValueError) -> Problem:
    """VLP001 for an NDJSON line orjson refused: bad encoding or bad JSON, and where (with
    what to do, for the near misses tools produce)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return not_utf8(line, data, bad)
    problem = json_error(line, error)
    hint = _json_hint(data, getattr(error, "colno", 0), problem.message)
    return replace(problem, message=problem.message + hint) if hint else problem


def _json_hint(data: bytes, column: int, message: str) -> str:
    """What a line that is almost JSON needs, for the shapes tools and models write."""
    line = data.decode("utf-8")  # the caller has checked it decodes
    text = line.lstrip()
    at = line[column - 1 :] if column > 0 else ""
    if text.startswith(("{'", "[{'")):
        return (
            " (JSON takes double quotes: this looks like a Python dict; write it with json.dumps)"
        )
    if "\x00" in line:
        return " (NUL characters: the text looks like UTF-16; save it as UTF-8)"
    if text.startswith("data:"):
        return " (a server-sent events line: keep only the JSON after 'data:')"
    start = line.find("{")
    if start > 0 and line[:start].strip() and _is_json_object(line[start:]):
        return (
            f" (text before the JSON, {line[:start].strip()[:30]!r}: a log prefix or a"
            f" line number? keep only the JSON, from column {start + 1})"
        )
    if "infinity when parsed as double" in message:
        return " (no VLP field holds a number this large: confidence is between 0 and 1)"
    if at.startswith(("NaN", "Infinity", "-Infinity")):
        return " (NaN and Infinity are not JSON numbers)"
    if at.startswith(("//", "/*", "#")):
        return " (JSON has no comments)"
    if at.startswith(("{", "[")) and column > 1:
        return (
            f" (a second JSON value on the same line: NDJSON takes one message a line;"
            f" break the line before column {column})"
        )
    if at.startswith(",") and at[1:].strip() == "":
        return " (NDJSON lines end without a comma: remove it)"
    return ""


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(orjson.loads(text), dict)
    except orjson.JSONDecodeError:
        return False


def overlong(line: int, limit: int) -> Problem:
    return Problem("VLP003", f"line longer than {limit} bytes; skipped", line)


def _at(text: str, position: int, *, same_line_as: int | None = None) -> str:
    """``line L, column C`` of a position in ``text`` (only the column when on the line
    of ``same_line_as``)."""
    line_start = text.rfind("\n", 0, position) + 1
    column = position - line_start + 1
    if same_line_as is not None and text.rfind("\n", 0, same_line_as) + 1 == line_start:
        return f"column {column}"
    return f"line {text.count(chr(10), 0, position) + 1}, column {column}"


def with_duplicates(
    record: Record, text: str, repeated: list[DuplicateKey], *, first_line: int = 1
) -> Record:
    """``record`` with a VLP005 problem for each repeated key (positions in ``text``,
    whose first line is line ``first_line``)."""
    if not repeated:
        return record
    ident = _ident(record.message)
    record.duplicates = repeated
    record.problems = record.problems + [
        Problem(
            "VLP005",
            describe(
                duplicate,
                _at(text, duplicate.first, same_line_as=duplicate.position),
                _at(text, duplicate.position, same_line_as=duplicate.first),
            ),
            first_line + text.count("\n", 0, duplicate.position),
            ident,
        )
        for duplicate in repeated
    ]
    return record


def _ident(msg: Any) -> str | None:
    ident = msg.get("id") if isinstance(msg, dict) else None
    return ident if isinstance(ident, str) else None


def line_record(number: int, line: bytes, msg: Any) -> Record:
    """The record of NDJSON line ``number`` parsed as ``msg``, repeated keys included."""
    record = record_of(number, msg)
    if not may_repeat_keys(line):
        return record
    text = line.decode("utf-8")  # orjson parsed it: UTF-8
    return with_duplicates(record, text, find_duplicate_keys(text), first_line=number)


def _line_duplicates(number: int, line: bytes, msg: Any) -> list[Problem]:
    """VLP005 for each key NDJSON line ``number`` gives twice."""
    if not may_repeat_keys(line):
        return []
    text = line.decode("utf-8")
    return with_duplicates(
        Record(number, msg), text, find_duplicate_keys(text), first_line=number
    ).problems


def record_of(line: int, msg: Any) -> Record:
    if is_surely_valid(msg):
        return Record(line, msg)
    return Record(line, msg, check_message(msg, line) or [])


def surely(msg: Any, line: bytes) -> bool:
    """``msg``, parsed from ``line``, is surely a valid message and the line gives no
    key twice."""
    return is_surely_valid(msg) and not may_repeat_keys(line)


def report(found: Sequence[Problem], summary: ScanSummary, on_problem: ProblemSink) -> None:
    summary.problems += len(found)
    for problem in found:
        on_problem(problem)


def settle(
    result: Any, number: int, line: bytes, summary: ScanSummary, on_problem: ProblemSink
) -> bool:
    """Report what is wrong with a line the fast check doubted; True if it is valid after
    all (a shape the fast check leaves to the full validator)."""
    if result.__class__ is Unparsed:
        if not is_framing(line):
            summary.problems += 1
            on_problem(unparsable(number, line, result.error))
        else:
            summary.messages -= 1  # blank and fence lines are not messages
        return False
    problems = (check_message(result, number) or []) + _line_duplicates(number, line, result)
    if not problems:
        return True
    summary.problems += len(problems)
    for problem in problems:
        on_problem(problem)
    return False


def count_record(
    summary: ScanSummary,
    record: Record,
    on_problem: ProblemSink,
    on_message: MessageSink | None,
    *,
    counted: bool = False,
) -> None:
    if not counted:
        summary.messages += 1
    if record.ok:
        summary.valid += 1
        if on_message is not None:
            on_message(record.message, record.line)
        return
    summary.problems += len(record.problems)
    for problem in record.problems:
        on_problem(problem)
