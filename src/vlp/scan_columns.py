"""The NDJSON lines of a read checked together: decoded in batches into columns, the
thread checks fed from them, only the doubtful lines explained one by one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import orjson

from vlp._columns import columns
from vlp.errors import Problem
from vlp.fastpath import decode_lines
from vlp.line_problems import (
    MessageSink,
    ProblemSink,
    Record,
    ScanSummary,
    Unparsed,
    report,
    settle,
    surely,
)
from vlp.thread import Columns, ThreadChecker, salvaged_fields, thread_fields

# Lines decoded and thread-checked together. A slice's decoded structs, lines and columns
# (~1 kB a line) must fit a core's L2 (512 kB here) beside the interpreter's own data: 256
# costs the same instructions as 512 but less CPU time, the more so on a loaded machine
# (docs/decisions.md, vlp35f).
THREAD_SLICE = 256


def thread_record(
    thread: ThreadChecker, record: Record, summary: ScanSummary, on_problem: ProblemSink
) -> None:
    if record.ok:
        found: Sequence[Problem] = thread.add(record.message, record.line)
    else:
        found = thread.note_invalid(record.message, line=record.line)
    summary.problems += len(found)
    for problem in found:
        on_problem(problem)


def thread_lines(
    lines: list[bytes],
    start: int,
    summary: ScanSummary,
    on_problem: ProblemSink,
    on_message: MessageSink | None,
    thread: ThreadChecker,
) -> int:
    """:func:`count_lines` with the checks across messages: every line gives the thread
    checker its fields as columns, straight from the decoded lines (no dict) for those
    surely valid."""
    if on_message is not None:
        return sum(
            _thread_line(line, start + index, summary, on_problem, on_message, thread)
            for index, line in enumerate(lines)
        )
    explained: list[Problem] = []
    found: list[Problem] = []
    valid = 0
    for offset, slice_valid, thread_columns in column_slices(lines, start, summary, explained):
        valid += slice_valid
        found += thread.add_batch(thread_columns, start + offset)
    report_batch(explained, found, summary, on_problem)
    return valid


def column_slices(
    lines: list[bytes], start: int, summary: ScanSummary, explained: list[Problem]
) -> Iterator[tuple[int, int, Columns]]:
    """``(offset, valid lines, thread columns)`` of each slice of ``lines``, the problems
    of their invalid lines to ``explained``. Slices small enough that a slice's decoded
    lines stay in the CPU caches while its columns are read and checked."""
    for offset in range(0, len(lines), THREAD_SLICE):
        part = lines[offset : offset + THREAD_SLICE]
        yield offset, *slice_columns(part, start + offset, summary, explained)


def report_batch(
    explained: list[Problem], found: list[Problem], summary: ScanSummary, on_problem: ProblemSink
) -> None:
    """A read's problems in line order: those of its lines, then the thread checks'."""
    summary.problems += len(found)
    if explained and found:
        found = sorted(explained + found, key=_problem_line)
    for problem in found or explained:
        on_problem(problem)


def slice_columns(
    lines: list[bytes], start: int, summary: ScanSummary, explained: list[Problem]
) -> tuple[int, Columns]:
    """How many of ``lines`` are valid, and their thread columns; the problems of the
    others go to ``explained``."""
    shapes, doubtful = decode_lines(lines)
    ids, codes, refs, sessions, seqs = columns(shapes, _COLUMNS)
    # A doubtful line's row is rewritten: a valid message's fields, or what can be read
    # of an invalid one (or a blank line).
    valid = len(lines) - len(doubtful)
    for index in doubtful:
        line, number = lines[index], start + index
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            settle(Unparsed(error), number, line, summary, explained.append)
            row = salvaged_fields(None, line)
        else:
            # No `surely` first: the decoders doubted the line, and on the lines they doubt
            # it is all but never true (0 of 3,068 on the bench); settle is the verdict.
            if settle(msg, number, line, summary, explained.append):
                row = thread_fields(msg)
                valid += 1
            else:
                row = salvaged_fields(msg, line)
        ids[index], codes[index], refs[index], sessions[index], seqs[index] = row
    return valid, (ids, codes, refs, sessions, seqs)


_COLUMNS = ("id", "code", "refers_to", "session_id", "seq")


def _problem_line(problem: Problem) -> int:
    return problem.line or 0


def _thread_line(
    line: bytes,
    number: int,
    summary: ScanSummary,
    on_problem: ProblemSink,
    on_message: MessageSink | None,
    thread: ThreadChecker,
) -> int:
    """One line through validation and the thread checks, the slow way: 1 if valid."""
    try:
        msg = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        settle(Unparsed(error), number, line, summary, on_problem)
        report(thread.note_invalid(None, line, number), summary, on_problem)
        return 0
    if not surely(msg, line) and not settle(msg, number, line, summary, on_problem):
        report(thread.note_invalid(msg, line, number), summary, on_problem)
        return 0
    if on_message is not None:
        on_message(msg, number)
    report(thread.add(msg, number), summary, on_problem)
    return 1


def count_lines(
    lines: list[bytes], start: int, summary: ScanSummary, on_problem: ProblemSink
) -> int:
    """How many of ``lines`` (the first being line ``start``) hold valid messages; the
    problems of the others go to ``on_problem``.

    Most lines pass the fast check on their bytes (no dict is built); the others are
    explained after the whole batch, all together: met one by one between valid lines,
    the explaining code would drop out of the CPU caches.
    """
    doubtful = decode_lines(lines)[1]
    valid = len(lines) - len(doubtful)
    loads = orjson.loads
    for index in doubtful:
        line = lines[index]
        try:
            msg = loads(line)
        except orjson.JSONDecodeError as error:
            msg = Unparsed(error)
        valid += settle(msg, start + index, line, summary, on_problem)  # as in slice_columns
    return valid
