"""NDJSON (and plain JSON) streams of VLP messages: a resilient streaming reader and an
atomic line-by-line writer.

The reader reads large chunks and splits lines itself, so memory stays bounded by the
chunk size plus the maximum line length whatever the file size. Every bad line (invalid
JSON, not an object, schema or rule violation, over-long line) becomes a Problem with
its line number; every good message is kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Self

import orjson

from vlp.documents import detect, read_records
from vlp.errors import VLPError
from vlp.jobs import Worker
from vlp.line_problems import (
    MessageSink,
    ProblemSink,
    Record,
    ScanSummary,
    Unparsed,
    count_record,
    overlong,
    settle,
    surely,
)
from vlp.line_reader import (
    CHUNK_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    Reader,
    Source,
    line_batches,
    opened_source,
)
from vlp.scan_columns import count_lines, thread_lines, thread_record
from vlp.scan_parts import (
    SPLIT_MIN_BYTES,
    Limited,
    Part,
    is_path,
    split_parts,
    start_workers,
    stop_workers,
    take_parts,
)
from vlp.thread import ThreadChecker
from vlp.validate import message_problems

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CHUNK_BYTES",
    "DEFAULT_MAX_LINE_BYTES",
    "SPLIT_MIN_BYTES",
    "MessageSink",
    "NdjsonWriter",
    "ProblemSink",
    "Record",
    "ScanSummary",
    "Source",
    "append_message",
    "dumps_line",
    "read_messages",
    "read_records",
    "scan",
]
_SLICE = 64  # lines parsed before validating them together in scan()


def read_messages(
    source: Source, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[dict[str, Any]]:
    """Only the valid messages of a source, in order."""
    for record in read_records(source, max_line_bytes=max_line_bytes):
        if record.ok:
            yield record.message


def scan(
    source: Source,
    on_problem: ProblemSink,
    on_message: MessageSink | None = None,
    *,
    thread: ThreadChecker | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    chunk_bytes: int | None = None,
    jobs: int | None = 1,
    split_min_bytes: int | None = None,
) -> ScanSummary:
    """Validate a whole source, calling ``on_problem`` for each problem and ``on_message``
    for each valid message with its line. This is the fast path behind ``vlp validate``:
    a valid message costs one parse and one pass of the fast check; only the others
    are explained.

    With ``thread``, every message also goes through the checks across messages, in line
    order, and their problems go to ``on_problem`` too (an invalid message is noted, so
    nothing derived from it is reported again).

    ``jobs`` processes (None: one per usable CPU) share a regular file of at least
    ``split_min_bytes`` given by path: worker processes decode and validate the later
    parts while this one does the first, then the thread checks run over every part in
    line order. The report is the same, problem for problem, as with ``jobs=1``; a worker
    that dies raises :class:`vlp.jobs.WorkerFailed`. Stdin, streams and ``on_message``
    always take one process."""
    summary = ScanSummary()
    chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes  # read at each call:
    split_min_bytes = SPLIT_MIN_BYTES if split_min_bytes is None else split_min_bytes  # tests
    with opened_source(source) as opened:
        records, stream, first = detect(opened, chunk_bytes, max_line_bytes)
        if records is not None:
            for record in records:
                count_record(summary, record, on_problem, on_message)
                if thread is not None:
                    thread_record(thread, record, summary, on_problem)
            return summary
        parts: list[Part] = []
        if on_message is None and stream is opened and is_path(source):
            parts = split_parts(opened, jobs, split_min_bytes, min(chunk_bytes, max_line_bytes))
        workers: list[Worker] = []
        try:
            if parts:  # this process reads up to the first part
                beyond = opened.tell() - parts[0].start  # > 0: the part starts in `first`
                first = first[: len(first) - beyond] if beyond > 0 else first
                stream = Limited(opened, max(0, -beyond))
                workers = start_workers(opened, source, parts, chunk_bytes, max_line_bytes, thread)
            valid, last_line = _scan_lines(
                stream, first, summary, on_problem, on_message, thread, max_line_bytes, chunk_bytes
            )
            if workers:
                valid += take_parts(workers, last_line, summary, on_problem, thread)
        finally:
            stop_workers(workers)
        summary.valid += valid
    return summary


def _scan_lines(
    stream: Reader,
    first: bytes,
    summary: ScanSummary,
    on_problem: ProblemSink,
    on_message: MessageSink | None,
    thread: ThreadChecker | None,
    max_line_bytes: int,
    chunk_bytes: int,
) -> tuple[int, int]:
    """:func:`scan` of NDJSON: how many lines were valid, and the number of the last."""
    loads = orjson.loads
    surely_valid = surely
    valid = 0  # local counter: this loop is the hot path of `vlp validate`
    last_line = 0
    for start, lines in line_batches(stream, first, max_line_bytes, chunk_bytes):
        if lines is None:
            summary.messages += 1
            summary.problems += 1
            on_problem(overlong(start, max_line_bytes))
            last_line = start
            continue
        last_line = start + len(lines) - 1
        summary.messages += len(lines)
        if thread is not None:
            valid += thread_lines(lines, start, summary, on_problem, on_message, thread)
            continue
        if on_message is None:
            valid += count_lines(lines, start, summary, on_problem)
            continue
        # Parse a small slice, then validate it with map(): the calls are driven from C
        # and the slice's dicts stay few enough to remain in cache.
        for offset in range(0, len(lines), _SLICE):
            part = lines[offset : offset + _SLICE]
            parsed: list[Any] = []
            append = parsed.append
            for line in part:
                try:
                    append(loads(line))
                except orjson.JSONDecodeError as error:
                    append(Unparsed(error))
            verdicts = list(map(surely_valid, parsed, part))
            valid += verdicts.count(True)
            # on_message sees messages and problems in line order.
            number = start + offset
            for index, msg in enumerate(parsed):
                if verdicts[index]:
                    on_message(msg, number + index)
                elif settle(msg, number + index, part[index], summary, on_problem):
                    valid += 1
                    on_message(msg, number + index)
    return valid, last_line


def dumps_line(msg: dict[str, Any]) -> bytes:
    """One NDJSON line (with its newline) for a message."""
    return orjson.dumps(msg) + b"\n"


class NdjsonWriter:
    """Appends messages to an NDJSON file, one ``write(2)`` per line.

    The file is opened with O_APPEND and each line goes out in a single system call, so
    lines from concurrent writers never interleave and a crash leaves at most one torn
    final line. Invalid messages, and values JSON cannot carry (which orjson would refuse
    or, for NaN, silently write as null), are refused (VLPError) unless ``validate=False``.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, validate: bool = True, fsync: bool = False
    ) -> None:
        from pathlib import Path  # not at import: `vlp validate` needs no pathlib (start-up)

        self.path: Path = Path(path)
        self._validate = validate
        self._fsync = fsync
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, msg: dict[str, Any]) -> None:
        if self._fd < 0:
            raise ValueError(f"NdjsonWriter for {self.path} is closed")
        if self._validate:
            problems = message_problems(msg)
            if problems:
                raise VLPError(problems)
        data = dumps_line(msg)
        written = os.write(self._fd, data)
        while written < len(data):  # only on exotic filesystems; keep the line whole
            written += os.write(self._fd, data[written:])
        if self._fsync:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def append_message(path: str | os.PathLike[str], msg: dict[str, Any]) -> None:
    """Validate ``msg`` and append it as one line to ``path``."""
    with NdjsonWriter(path) as writer:
        writer.write(msg)
