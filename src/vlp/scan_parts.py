"""A large file shared between processes: the parts, the workers that decode and validate
them, and their batches taken back in line order.
"""

from __future__ import annotations

import io
import os
import stat
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from typing import Any, BinaryIO

from vlp.errors import Problem
from vlp.jobs import Emit, Worker, WorkerFailed, can_fork, usable_cpus
from vlp.line_problems import ProblemSink, ScanSummary, overlong
from vlp.line_reader import Reader, Source, line_batches
from vlp.scan_columns import column_slices, count_lines, report_batch
from vlp.thread import Columns, ThreadChecker

#: A file is split between processes (``jobs``) from this size on: below it, forking and
#: handing the columns back cost more than the second core saves (docs/decisions.md).
SPLIT_MIN_BYTES = 8 * 1024 * 1024
_MAX_JOBS = 8
#: A worker's part of the file against the main process's: the main process also runs the
#: thread checks of every part, in line order, once its own part is done.
_WORKER_SHARE = 1.25


def is_path(source: Source) -> bool:
    return isinstance(source, (str, os.PathLike)) and str(source) != "-"


@dataclass(frozen=True, slots=True)
class Part:
    """The lines of a file a worker process reads: from byte ``start`` (a line's first)
    to ``end`` (the next part's start; None: the end of the file). ``boundary`` is the
    first read boundary of the single-process path after ``start``: the worker reads from
    there in the same steps, so its batches of lines are exactly those of that path."""

    start: int
    boundary: int
    end: int | None


class Limited:
    """The first ``size`` bytes of a stream."""

    def __init__(self, stream: Reader, size: int) -> None:
        self._stream = stream
        self._left = size

    def read(self, size: int = -1, /) -> bytes:
        size = self._left if size < 0 else min(size, self._left)
        data = self._stream.read(size) if size else b""
        self._left -= len(data)
        return data


class _PositionedReader:
    """Reads of a file descriptor from ``position`` up to ``end``, leaving its offset alone."""

    def __init__(self, fd: int, position: int, end: int | None) -> None:
        self._fd, self._position, self._end = fd, position, end

    def read(self, size: int = -1, /) -> bytes:
        if self._end is not None:
            size = self._end - self._position if size < 0 else min(size, self._end - self._position)
        if size <= 0:
            return b""
        data = os.pread(self._fd, size, self._position)
        self._position += len(data)
        return data


def split_parts(opened: BinaryIO, jobs: int | None, min_bytes: int, read_bytes: int) -> list[Part]:
    """The parts of a regular file of at least ``min_bytes`` that worker processes read
    (the main process reads up to the first); none for one job or one CPU.

    Parts start just after a newline found in the read before one of the single-process
    path's read boundaries (the end of the first read, already done, included), so each
    part's batches of lines are that path's."""
    count = usable_cpus() if jobs is None else jobs
    if count < 2 or not can_fork():
        return []
    try:
        fd = opened.fileno()
        info = os.fstat(fd)
        position = opened.tell()
    except (OSError, AttributeError, io.UnsupportedOperation):
        return []
    if not stat.S_ISREG(info.st_mode) or info.st_size < min_bytes:
        return []
    count = min(count, _MAX_JOBS)
    size = info.st_size
    weight = 1 + (count - 1) * _WORKER_SHARE
    parts: list[Part] = []
    for index in range(1, count):
        cut = size * (1 + (index - 1) * _WORKER_SHARE) / weight
        boundary = position + max(0, round((cut - position) / read_bytes)) * read_bytes
        if boundary >= size or parts and boundary <= parts[-1].boundary:
            continue
        before = os.pread(fd, read_bytes, boundary - read_bytes)
        newline = before.rfind(b"\n")
        if newline >= 0:
            parts.append(Part(boundary - read_bytes + newline + 1, boundary, None))
    return [
        Part(part.start, part.boundary, following.start) for part, following in pairwise(parts)
    ] + parts[-1:]


_Prepared = tuple[int, int, int, int, list[tuple[str, str, int | None, str | None]], list[Any]]
"""A batch of lines as a worker hands it back: ``(first line, messages, valid, problems,
problems of its lines as (code, message, line, id), [(offset, packed thread columns) per
slice])``, line numbers counted from the part's first line."""


def start_workers(
    opened: BinaryIO,
    source: Source,
    parts: list[Part],
    chunk_bytes: int,
    max_line_bytes: int,
    thread: ThreadChecker | None,
) -> list[Worker]:
    workers: list[Worker] = []
    try:
        for part in parts:
            work = partial(
                _prepare_part,
                opened.fileno(),
                part,
                chunk_bytes,
                max_line_bytes,
                thread is not None,
            )
            workers.append(Worker(work, f"{source!s} from byte {part.start}"))
    except BaseException:
        stop_workers(workers)
        raise
    return workers


def stop_workers(workers: list[Worker]) -> None:
    for worker in workers:
        worker.stop()


def _prepare_part(
    fd: int, part: Part, chunk_bytes: int, max_line_bytes: int, columns: bool, emit: Emit
) -> int:
    """In a worker: the lines of ``part`` decoded and validated, each batch given to
    ``emit`` with its thread columns when ``columns``; returns how many lines the part has."""
    read_bytes = min(chunk_bytes, max_line_bytes)
    stop = (
        part.boundary + read_bytes
        if part.end is None
        else min(part.boundary + read_bytes, part.end)
    )
    first = os.pread(fd, stop - part.start, part.start)
    rest = _PositionedReader(fd, part.start + len(first), part.end)
    last_line = 0
    for start, lines in line_batches(rest, first, max_line_bytes, chunk_bytes):
        if lines is None:
            problem = overlong(start, max_line_bytes)
            overlong_batch: _Prepared = (
                start,
                1,
                0,
                1,
                [(problem.code, problem.message, start, None)],
                [],
            )
            emit(overlong_batch)
            last_line = start
            continue
        last_line = start + len(lines) - 1
        summary = ScanSummary(messages=len(lines))
        explained: list[Problem] = []
        slices: list[Any] = []
        if columns:
            valid = 0
            for offset, part_valid, part_columns in column_slices(lines, start, summary, explained):
                valid += part_valid
                slices.append((offset, _packed(part_columns)))
        else:
            valid = count_lines(lines, start, summary, explained.append)
        shown = [(p.code, p.message, p.line, p.id) for p in explained]
        batch: _Prepared = (start, summary.messages, valid, summary.problems, shown, slices)
        emit(batch)
    return last_line


_SEPARATOR = "\x00"


def _packed(columns: Columns) -> tuple[Any, ...]:
    """Thread columns in a few flat objects, cheap to pickle: each column of strings as
    one string (when no value holds the separator), type codes as bytes, seqs as int64."""
    ids, codes, refs, sessions, seqs = columns
    try:
        seq_column: Any = array("q", seqs).tobytes()
    except OverflowError:  # a seq beyond int64 (not a usable one, but kept as read)
        seq_column = seqs
    return (_joined(ids), bytes(codes), _joined(refs), _joined(sessions), seq_column)


def _joined(column: Sequence[Any]) -> Any:
    if all(value.__class__ is str for value in column):
        text = _SEPARATOR.join(column)
        if text.count(_SEPARATOR) == len(column) - 1 and column:
            return text
    return column


def _unpacked(packed: tuple[Any, ...]) -> Columns:
    ids, codes, refs, sessions, seqs = packed
    return (
        _split_column(ids),
        list(codes),
        _split_column(refs),
        _split_column(sessions),
        array("q", seqs).tolist() if seqs.__class__ is bytes else seqs,
    )


def _split_column(column: Any) -> Any:
    return column.split(_SEPARATOR) if column.__class__ is str else column


def take_parts(
    workers: list[Worker],
    last_line: int,
    summary: ScanSummary,
    on_problem: ProblemSink,
    thread: ThreadChecker | None,
) -> int:
    """The workers' batches, in line order, after the main process's own: their problems
    reported and their columns thread-checked as the single-process path does. Returns
    how many lines were valid."""
    valid = 0
    try:
        for worker in workers:
            for prepared in worker.results():
                if prepared.__class__ is int:  # the last: how many lines the part has
                    last_line += prepared
                    break
                start, messages, batch_valid, problems, shown, slices = prepared
                summary.messages += messages
                summary.problems += problems
                valid += batch_valid
                explained = [
                    Problem(code, message, None if line is None else line + last_line, ident)
                    for code, message, line, ident in shown
                ]
                found: list[Problem] = []
                if thread is not None:
                    for offset, columns in slices:
                        found += thread.add_batch(_unpacked(columns), last_line + start + offset)
                report_batch(explained, found, summary, on_problem)
            else:
                raise WorkerFailed(f"the worker process for {worker.what} handed back no end")
    finally:
        stop_workers(workers)
    return valid
