"""NDJSON (and plain JSON) streams of VLP messages: a resilient streaming reader and an
atomic line-by-line writer.

The reader reads large chunks and splits lines itself, so memory stays bounded by the
chunk size plus the maximum line length whatever the file size. Every bad line (invalid
JSON, not an object, schema or rule violation, over-long line) becomes a Problem with
its line number; every good message is kept.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import stat
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import pairwise
from operator import attrgetter
from pathlib import Path
from typing import Any, BinaryIO, Protocol, Self

import orjson

from vlp.duplicates import DuplicateKey, describe, find_duplicate_keys, may_repeat_keys
from vlp.errors import Problem, VLPError
from vlp.fastpath import decode_lines
from vlp.fenced import only_lines, prose_problem_text, read_markdown
from vlp.jobs import Emit, Worker, WorkerFailed, can_fork, usable_cpus
from vlp.thread import Columns, ThreadChecker, salvaged_fields, thread_fields
from vlp.validate import check_message, is_surely_valid, message_problems

DEFAULT_MAX_LINE_BYTES = 1024 * 1024
CHUNK_BYTES = 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_SNIFF_BYTES = 64 * 1024
_SLICE = 64  # lines parsed before validating them together in scan()
_THREAD_SLICE = 512  # lines decoded and thread-checked together: their objects stay in cache
_PROBE_BYTES = 16 * 1024 * 1024  # an object spread over lines is looked for in inputs up to this
_DOCUMENT_BYTES = _PROBE_BYTES  # a JSON document is parsed whole up to this; beyond, streamed
_JSON_SPACE = " \t\r\n"
#: A file is split between processes (``jobs``) from this size on: below it, forking and
#: handing the columns back cost more than the second core saves (docs/decisions.md).
SPLIT_MIN_BYTES = 8 * 1024 * 1024
_MAX_JOBS = 8
#: A worker's part of the file against the main process's: the main process also runs the
#: thread checks of every part, in line order, once its own part is done.
_WORKER_SHARE = 1.25
# A Markdown code fence line (```json, ~~~): framing models and documents put around JSON,
# never a message, so it is skipped like a blank line (docs/decisions.md, "Conformance
# (protocol transcripts)").
_FENCE = re.compile(rb"[ \t]*(?:`{3,}|~{3,})[\w.+-]*[ \t]*\r?")
_LEADING_SPACE = re.compile(rb"\s*")
_FENCE_LINE = re.compile(rb"^[ \t]*(?:`{3,}|~{3,})[\w.+-]*[ \t]*\r?$", re.MULTILINE)

Source = str | os.PathLike[str] | BinaryIO
ProblemSink = Callable[[Problem], None]
MessageSink = Callable[[dict[str, Any], int], None]


class _Reader(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _Replay:
    """Bytes already read from a stream, then the rest of the stream."""

    def __init__(self, head: bytes, rest: _Reader) -> None:
        self._head = memoryview(head)
        self._rest = rest

    def read(self, size: int = -1, /) -> bytes:
        if not self._head:
            return self._rest.read(size)
        if size < 0:
            data = bytes(self._head) + self._rest.read()
            self._head = memoryview(b"")
            return data
        data = bytes(self._head[:size])
        self._head = self._head[size:]
        return data


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


class _Unparsed:
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


def _json_error(line: int, error: ValueError) -> Problem:
    if isinstance(error, json.JSONDecodeError):  # orjson's error is one too
        return Problem("VLP001", f"invalid JSON at column {error.colno}: {error.msg}", line)
    return Problem("VLP001", f"invalid JSON: {error}", line)


def _not_utf8(first_line: int, data: bytes, error: UnicodeDecodeError) -> Problem:
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


def _unparsable(line: int, data: bytes, error: ValueError) -> Problem:
    """VLP001 for an NDJSON line orjson refused: bad encoding or bad JSON, and where (with
    what to do, for the near misses tools produce)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        return _not_utf8(line, data, bad)
    problem = _json_error(line, error)
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


def _overlong(line: int, limit: int) -> Problem:
    return Problem("VLP003", f"line longer than {limit} bytes; skipped", line)


def _is_framing(line: bytes) -> bool:
    """A blank line or a code fence line: no message, not a problem."""
    return not line.strip() or _FENCE.fullmatch(line) is not None


def _blank_fences(data: bytes) -> bytes:
    """``data`` with its code fence lines emptied (line numbers stay as they were)."""
    if b"```" not in data and b"~~~" not in data:
        return data
    return _FENCE_LINE.sub(b"", data)


def _blank_opening_fence(head: bytes) -> bytes:
    """``head`` with its first non-blank line emptied if that line is a code fence."""
    start = _LEADING_SPACE.match(head).end()  # type: ignore[union-attr]  # always matches
    end = head.find(b"\n", start)
    if end < 0 or _FENCE.fullmatch(head, start, end) is None:
        return head
    return head[:start] + head[end:]


@contextmanager
def _opened(source: Source) -> Iterator[BinaryIO]:
    if isinstance(source, (str, os.PathLike)):
        if str(source) == "-":
            yield sys.stdin.buffer
            return
        with open(source, "rb") as stream:
            yield stream
    else:
        yield source


def _line_batches(
    stream: _Reader, first: bytes, max_line_bytes: int, chunk_bytes: int
) -> Iterator[tuple[int, list[bytes] | None]]:
    """Yield ``(number of first line, complete lines)``; ``(n, None)`` marks line n as over-long.

    Only a partial line shorter than ``max_line_bytes`` is carried between chunks; an
    over-long one is dropped and the rest of it skipped up to its newline.
    """
    carry = b""
    skipping = False
    last_line = 0
    chunk = first
    # Reads never exceed the limit, so within a batch only the first line (which
    # carries the previous chunk's tail) can be over-long.
    chunk_bytes = min(chunk_bytes, max_line_bytes)
    while chunk:
        if skipping:
            newline = chunk.find(b"\n")
            if newline < 0:
                chunk = stream.read(chunk_bytes)
                continue
            chunk = chunk[newline + 1 :]
            last_line += 1
            skipping = False
        lines = chunk.split(b"\n")
        if carry:
            lines[0] = carry + lines[0]
        carry = lines.pop()
        if lines and len(lines[0]) > max_line_bytes:
            last_line += 1
            yield last_line, None
            del lines[0]
        if lines:
            yield last_line + 1, lines
            last_line += len(lines)
        if len(carry) > max_line_bytes:
            yield last_line + 1, None
            carry = b""
            skipping = True
        chunk = stream.read(chunk_bytes)
    if carry and not skipping:
        yield last_line + 1, [carry]


def _first_chunk(stream: _Reader, chunk_bytes: int, max_line_bytes: int) -> bytes:
    """The first read, extended to the first newline (up to 64 KiB) so the format can be
    told. Bytes after that newline come from the last read, so no line but the first can
    exceed ``max_line_bytes`` in it."""
    size = min(chunk_bytes, max_line_bytes)
    first = stream.read(size)
    while b"\n" not in first and len(first) < _SNIFF_BYTES:
        more = stream.read(size)
        if not more:
            break
        first += more
    return first.removeprefix(_BOM)


def _looks_like_json_document(head: bytes) -> bool:
    """A stream is one JSON document when it opens with '[' or with '{' alone on its line
    (pretty-printed); anything else is read as NDJSON, one message a line."""
    text = head.lstrip()
    if text.startswith(b"["):
        return True
    first_line, newline, _ = text.partition(b"\n")
    return bool(newline) and first_line.strip() == b"{"  # a whole line, not a chunk's end


def _first_line_is_json(data: bytes) -> bool:
    try:
        orjson.loads(data.lstrip().split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return False
    return True


def _read_at_most(stream: _Reader, head: bytes, limit: int) -> bytes:
    """``head`` and what follows in ``stream``, stopping once more than ``limit`` bytes are
    in hand (so a result of ``limit`` bytes or fewer is the whole input)."""
    parts = [head]
    size = len(head)
    while size <= limit:
        part = stream.read(min(CHUNK_BYTES, limit + 1 - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _detect(
    stream: _Reader, chunk_bytes: int, max_line_bytes: int
) -> tuple[Iterable[Record] | None, _Reader, bytes]:
    """Tell one JSON document from NDJSON: ``(records, _, _)`` for a document, else
    ``(None, stream, first chunk)`` to read NDJSON from.

    A document opens with '[' or with '{' alone on its line. Input opening with '{' whose
    (complete) first line is not JSON by itself may be an object pretty-printed with its
    first key on the brace's line: if the whole input is at most 16 MiB and parses as one
    document, it is one. Anything else is NDJSON.
    """
    first = _first_chunk(stream, chunk_bytes, max_line_bytes)
    if (b"```" in first or b"~~~" in first) and _FENCE_LINE.search(first) is not None:
        data = _read_at_most(stream, first, _PROBE_BYTES)
        markdown = _markdown_records(data) if len(data) <= _PROBE_BYTES else None
        if markdown is not None:
            return markdown, io.BytesIO(b""), b""
        stream = _Replay(data, stream)
        first = _first_chunk(stream, chunk_bytes, max_line_bytes)
    first = _blank_opening_fence(first)
    rest: _Reader
    if _looks_like_json_document(first):
        data = _read_at_most(stream, first, _DOCUMENT_BYTES)
        if len(data) > _DOCUMENT_BYTES:  # too big to parse whole: element by element
            return _streamed_array(data, stream, max_line_bytes), io.BytesIO(b""), b""
        data = _blank_fences(data)
        records = _document_or_ndjson(data)
        rest = io.BytesIO(data)
    elif (
        first.lstrip().startswith(b"{")
        and b"\n" in first  # a whole first line, not an over-long one
        and not _first_line_is_json(first)
    ):
        data = _read_at_most(stream, first, _PROBE_BYTES)
        records = None
        if len(data) <= _PROBE_BYTES:
            records = list(_document_records(_blank_fences(data)))
            if len(records) == 1 and records[0].message is None:
                records = None  # not a document either: NDJSON reports each bad line
        rest = _Replay(data, stream)
    else:
        return None, stream, first
    if records is not None:
        return records, rest, b""
    return None, rest, _first_chunk(rest, chunk_bytes, max_line_bytes)


def _markdown_records(data: bytes) -> list[Record] | None:
    """Records of Markdown around fenced JSON blocks (a chat answer, a document): each
    block's messages at their lines, and one VLP001 for the text around them; None when
    ``data`` is not that (:func:`vlp.fenced.read_markdown`)."""
    try:
        markdown = read_markdown(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None
    if markdown is None:
        return None
    first = markdown.prose[0]
    records = [Record(first, None, [Problem("VLP001", prose_problem_text(markdown), first)])]
    for first_line, last_line in markdown.blocks:
        records.extend(read_records(io.BytesIO(only_lines(data, first_line, last_line))))
    if markdown.loose:
        loose = only_lines(data, 0, -1, frozenset(markdown.loose))
        records.extend(read_records(io.BytesIO(loose)))
    return sorted(records, key=attrgetter("line"))


def _document_or_ndjson(data: bytes) -> list[Record] | None:
    """Records of ``data`` read as one JSON document, or None when it is not one but its
    first line is a JSON value by itself (NDJSON whose first message is an array line)."""
    records = list(_document_records(data))
    if len(records) == 1 and records[0].message is None and _first_line_is_json(data):
        return None
    return records


def _document_records(data: bytes) -> Iterator[Record]:
    """Records of a whole JSON document: one object, or an array of objects.

    orjson decides what is JSON and gives the values, exactly as for NDJSON lines (the json
    module would also take NaN, lone surrogates and numbers beyond a double); the json
    module only finds the line each array element starts on.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        problem = _not_utf8(1, data, error)
        yield Record(problem.line or 1, None, [problem])
        return
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        sequence = _sequence_records(text)
        if sequence is None:
            yield Record(error.lineno, None, [_json_error(error.lineno, error)])
        else:
            yield from sequence
        return
    start = len(text) - len(text.lstrip())
    line = text.count("\n", 0, start) + 1
    repeated = _repeated_in(text, start, data, document)
    if not isinstance(document, list):
        yield _with_duplicates(_record(line, document), text, repeated)
        return
    # Problems also name the element, since several may share a line.
    lines = _element_lines(text, start)
    for element, value in enumerate(document):
        line = next(lines, line)
        record = _record(line, value)
        record = _with_duplicates(record, text, _of_element(repeated, element))
        record.problems = [
            replace(problem, message=f"element [{element}]: {problem.message}")
            for problem in record.problems
        ]
        yield record


def _repeated_in(text: str, start: int, data: bytes, value: Any) -> list[DuplicateKey]:
    """The repeated keys of the value at ``start`` of ``text`` (``data`` encoded), looked
    for only when the colon count says there may be some."""
    return find_duplicate_keys(text, start) if may_repeat_keys(data, value) else []


def _of_element(repeated: list[DuplicateKey], element: int) -> list[DuplicateKey]:
    """The repeated keys inside element ``element`` of an array, named from the element."""
    prefix = f"[{element}]"
    return [
        replace(duplicate, path=duplicate.path[len(prefix) :].lstrip("."))
        for duplicate in repeated
        if duplicate.path.startswith((prefix + ".", prefix + "["))
    ]


def _at(text: str, position: int, *, same_line_as: int | None = None) -> str:
    """``line L, column C`` of a position in ``text`` (only the column when on the line
    of ``same_line_as``)."""
    line_start = text.rfind("\n", 0, position) + 1
    column = position - line_start + 1
    if same_line_as is not None and text.rfind("\n", 0, same_line_as) + 1 == line_start:
        return f"column {column}"
    return f"line {text.count(chr(10), 0, position) + 1}, column {column}"


def _with_duplicates(
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


def _line_record(number: int, line: bytes, msg: Any) -> Record:
    """The record of NDJSON line ``number`` parsed as ``msg``, repeated keys included."""
    record = _record(number, msg)
    if not may_repeat_keys(line, msg):
        return record
    text = line.decode("utf-8")  # orjson parsed it: UTF-8
    return _with_duplicates(record, text, find_duplicate_keys(text), first_line=number)


def _line_duplicates(number: int, line: bytes, msg: Any) -> list[Problem]:
    """VLP005 for each key NDJSON line ``number`` gives twice."""
    if not may_repeat_keys(line, msg):
        return []
    text = line.decode("utf-8")
    return _with_duplicates(
        Record(number, msg), text, find_duplicate_keys(text), first_line=number
    ).problems


def _sequence_records(text: str) -> list[Record] | None:
    """Records of JSON values written one after another, pretty-printed (what ``jq .``
    prints for a stream), each at the line it starts on; None unless at least two values
    read and one of them spans lines (one value a line is NDJSON). A value that does not
    parse is one problem, and reading resumes at the next line that opens an object at
    column 1, so one bad value loses nothing else.

    The json module only finds where each value ends (numbers are left unconverted, so
    no digit limit applies); orjson gives the values, as everywhere else."""
    decoder = json.JSONDecoder(parse_int=len, parse_float=len, parse_constant=len)
    records: list[Record] = []
    position, line, size = 0, 1, len(text)
    pretty = False  # some value spans lines
    while True:
        while position < size and text[position] in " \t\r\n":
            line += text[position] == "\n"
            position += 1
        if position == size:
            break
        try:
            _, end = decoder.raw_decode(text, position)
            value = orjson.loads(text[position:end])
        except json.JSONDecodeError as error:  # orjson's error is one too
            if not records:
                return None
            at = error.lineno + (line - 1 if isinstance(error, orjson.JSONDecodeError) else 0)
            problem = _json_error(at, error)
        except RecursionError:
            if not records:
                return None
            problem = Problem("VLP001", "invalid JSON: nested too deeply", line)
        else:
            repeated = _repeated_in(text, position, text[position:end].encode(), value)
            records.append(_with_duplicates(_record(line, value), text, repeated))
            spanned = text.count("\n", position, end)
            pretty = pretty or spanned > 0
            line += spanned
            position = end
            continue
        records.append(Record(problem.line or line, None, [problem]))
        resume = text.find("\n{", position)
        if resume < 0:
            break
        line += text.count("\n", position, resume)
        position = resume
    # One value a line is NDJSON, whose reader reports each bad line itself.
    return records if len(records) > 1 and pretty else None


def _element_lines(text: str, start: int) -> Iterator[int]:
    """The line each element of the (valid) array opening at ``start`` starts on."""
    decoder = json.JSONDecoder()
    position = start + 1
    line = text.count("\n", 0, position) + 1
    while True:
        while text[position] in " \t\r\n,":
            line += text[position] == "\n"
            position += 1
        if text[position] == "]":
            return
        yield line
        try:
            _, end = decoder.raw_decode(text, position)
        except RecursionError:  # nested deeper than the json module goes (orjson: 1024)
            return
        line += text.count("\n", position, end)
        position = end


class _ArrayText:
    """A window on the text of a JSON array read in chunks: ``text[pos:]`` is what is not
    consumed yet; ``line`` is the line ``pos`` is on."""

    def __init__(self, head: bytes, stream: _Reader) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._stream = stream
        self.text = self._decoder.decode(head)
        self.pos = 0
        self.line = 1
        self.ended = False

    def more(self) -> bool:
        """Read the next chunk (False at the end of the input); UnicodeDecodeError when
        the input is not UTF-8."""
        if self.ended:
            return False
        chunk = self._stream.read(CHUNK_BYTES)
        self.ended = not chunk
        self.text = self.text[self.pos :] + self._decoder.decode(chunk, final=self.ended)
        self.pos = 0
        return not self.ended

    def advance(self, end: int) -> None:
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def next_char(self) -> str | None:
        """The next character that is not JSON whitespace (skipped), None at the end."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and text[pos] in _JSON_SPACE:
                pos += 1
            self.advance(pos)
            if pos < len(text):
                return text[pos]
            if not self.more():
                return None


def _streamed_array(head: bytes, stream: _Reader, max_element_bytes: int) -> Iterator[Record]:
    """The records of a JSON document too big to parse whole: each element of a top-level
    array parsed on its own (memory stays bounded by the chunk size and the longest element,
    at most ``max_element_bytes`` like a line of NDJSON). What cannot be read on is one
    problem, and reading stops there."""
    window = _ArrayText(head, stream)
    scanner = json.JSONDecoder(parse_int=len, parse_float=len, parse_constant=len)
    try:
        if window.next_char() != "[":
            yield Record(1, None, [Problem("VLP001", _TOO_BIG_DOCUMENT, 1)])
            return
        window.advance(window.pos + 1)
        element = 0
        while True:
            found = window.next_char()
            if found == "]" or (found == "," and element > 0):
                window.advance(window.pos + 1)
                if found == "]":
                    break
                found = window.next_char()
            elif element > 0 and found is not None:
                after = f"expected ',' or ']' after element [{element - 1}]"
                yield _reading_stopped(window.line, after)
                return
            if found is None:
                ended = "the input ends inside the array (no closing ']')"
                yield _reading_stopped(window.line, ended)
                return
            end = _element_end(window, scanner, max_element_bytes)
            if isinstance(end, Problem):
                yield Record(end.line or window.line, None, [end])
                return
            yield _element_record(window, end, element)
            window.advance(end)
            element += 1
        if window.next_char() is not None:
            yield _reading_stopped(window.line, "data after the array's closing ']'")
    except UnicodeDecodeError as error:
        yield _reading_stopped(window.line, f"not UTF-8 (byte 0x{error.object[error.start]:02x})")


_TOO_BIG_DOCUMENT = (
    f"a JSON document over {_DOCUMENT_BYTES >> 20} MiB that is not an array: too big to "
    "validate whole; give NDJSON, one message a line"
)


def _reading_stopped(line: int, why: str) -> Record:
    return Record(line, None, [Problem("VLP001", f"invalid JSON: {why}; reading stopped", line)])


def _element_end(
    window: _ArrayText, scanner: json.JSONDecoder, max_element_bytes: int
) -> int | Problem:
    """Where the element at ``window.pos`` ends, reading more input while it may be cut
    off by the end of the window; a problem when it is invalid or longer than allowed."""
    while True:
        try:
            return scanner.raw_decode(window.text, window.pos)[1]
        except json.JSONDecodeError as error:
            if len(window.text) - window.pos > max_element_bytes:
                return _overlong(window.line, max_element_bytes)
            line = window.line + window.text.count("\n", window.pos, error.pos)
            if not window.more():
                return _json_error(line, error)
        except RecursionError:
            why = "invalid JSON: nested too deeply; reading stopped"
            return Problem("VLP001", why, window.line)


def _element_record(window: _ArrayText, end: int, element: int) -> Record:
    text = window.text[window.pos : end]
    data = text.encode("utf-8")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        record = Record(window.line, None, [_json_error(window.line, error)])
    else:
        # Columns of repeated keys count from the start of the element's first line.
        lead = " " * (window.pos - (window.text.rfind("\n", 0, window.pos) + 1))
        repeated = _repeated_in(lead + text, len(lead), data, value)
        record = _with_duplicates(
            _record(window.line, value), lead + text, repeated, first_line=window.line
        )
    record.problems = [
        replace(problem, message=f"element [{element}]: {problem.message}")
        for problem in record.problems
    ]
    return record


def _record(line: int, msg: Any) -> Record:
    if is_surely_valid(msg):
        return Record(line, msg)
    return Record(line, msg, check_message(msg, line) or [])


def read_records(
    source: Source,
    *,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[Record]:
    """Every record of an NDJSON or JSON source (path, ``"-"`` for stdin, or binary file).

    Unparseable and over-long lines come back as records without a message; invalid
    messages come back with their problems. Blank lines are skipped. Never raises for
    bad content; OSError from opening or reading still propagates.
    """
    loads = orjson.loads
    with _opened(source) as opened:
        records, stream, first = _detect(opened, chunk_bytes, max_line_bytes)
        if records is not None:
            yield from records
            return
        for start, lines in _line_batches(stream, first, max_line_bytes, chunk_bytes):
            if lines is None:
                yield Record(start, None, [_overlong(start, max_line_bytes)])
                continue
            number = start - 1
            for line in lines:
                number += 1
                try:
                    msg = loads(line)
                except orjson.JSONDecodeError as error:
                    if not _is_framing(line):
                        yield Record(number, None, [_unparsable(number, line, error)])
                    continue
                yield _line_record(number, line, msg)


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
    with _opened(source) as opened:
        records, stream, first = _detect(opened, chunk_bytes, max_line_bytes)
        if records is not None:
            for record in records:
                _count(summary, record, on_problem, on_message)
                if thread is not None:
                    _thread_record(thread, record, summary, on_problem)
            return summary
        parts: list[_Part] = []
        if on_message is None and stream is opened and _is_path(source):
            parts = _split(opened, jobs, split_min_bytes, min(chunk_bytes, max_line_bytes))
        workers: list[Worker] = []
        try:
            if parts:  # this process reads up to the first part
                beyond = opened.tell() - parts[0].start  # > 0: the part starts in `first`
                first = first[: len(first) - beyond] if beyond > 0 else first
                stream = _Limited(opened, max(0, -beyond))
                workers = _start_workers(opened, source, parts, chunk_bytes, max_line_bytes, thread)
            valid, last_line = _scan_lines(
                stream, first, summary, on_problem, on_message, thread, max_line_bytes, chunk_bytes
            )
            if workers:
                valid += _take_parts(workers, last_line, summary, on_problem, thread)
        finally:
            _stop(workers)
        summary.valid += valid
    return summary


def _scan_lines(
    stream: _Reader,
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
    surely_valid = _surely
    valid = 0  # local counter: this loop is the hot path of `vlp validate`
    last_line = 0
    for start, lines in _line_batches(stream, first, max_line_bytes, chunk_bytes):
        if lines is None:
            summary.messages += 1
            summary.problems += 1
            on_problem(_overlong(start, max_line_bytes))
            last_line = start
            continue
        last_line = start + len(lines) - 1
        summary.messages += len(lines)
        if thread is not None:
            valid += _thread_lines(lines, start, summary, on_problem, on_message, thread)
            continue
        if on_message is None:
            valid += _count_lines(lines, start, summary, on_problem)
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
                    append(_Unparsed(error))
            verdicts = list(map(surely_valid, parsed, part))
            valid += verdicts.count(True)
            # on_message sees messages and problems in line order.
            number = start + offset
            for index, msg in enumerate(parsed):
                if verdicts[index]:
                    on_message(msg, number + index)
                elif _settle(msg, number + index, part[index], summary, on_problem):
                    valid += 1
                    on_message(msg, number + index)
    return valid, last_line


def _is_path(source: Source) -> bool:
    return isinstance(source, (str, os.PathLike)) and str(source) != "-"


@dataclass(frozen=True, slots=True)
class _Part:
    """The lines of a file a worker process reads: from byte ``start`` (a line's first)
    to ``end`` (the next part's start; None: the end of the file). ``boundary`` is the
    first read boundary of the single-process path after ``start``: the worker reads from
    there in the same steps, so its batches of lines are exactly those of that path."""

    start: int
    boundary: int
    end: int | None


class _Limited:
    """The first ``size`` bytes of a stream."""

    def __init__(self, stream: _Reader, size: int) -> None:
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


def _split(opened: BinaryIO, jobs: int | None, min_bytes: int, read_bytes: int) -> list[_Part]:
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
    parts: list[_Part] = []
    for index in range(1, count):
        cut = size * (1 + (index - 1) * _WORKER_SHARE) / weight
        boundary = position + max(0, round((cut - position) / read_bytes)) * read_bytes
        if boundary >= size or parts and boundary <= parts[-1].boundary:
            continue
        before = os.pread(fd, read_bytes, boundary - read_bytes)
        newline = before.rfind(b"\n")
        if newline >= 0:
            parts.append(_Part(boundary - read_bytes + newline + 1, boundary, None))
    return [
        _Part(part.start, part.boundary, following.start) for part, following in pairwise(parts)
    ] + parts[-1:]


_Prepared = tuple[int, int, int, int, list[tuple[str, str, int | None, str | None]], list[Any]]
"""A batch of lines as a worker hands it back: ``(first line, messages, valid, problems,
problems of its lines as (code, message, line, id), [(offset, packed thread columns) per
slice])``, line numbers counted from the part's first line."""


def _start_workers(
    opened: BinaryIO,
    source: Source,
    parts: list[_Part],
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
        _stop(workers)
        raise
    return workers


def _stop(workers: list[Worker]) -> None:
    for worker in workers:
        worker.stop()


def _prepare_part(
    fd: int, part: _Part, chunk_bytes: int, max_line_bytes: int, columns: bool, emit: Emit
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
    for start, lines in _line_batches(rest, first, max_line_bytes, chunk_bytes):
        if lines is None:
            problem = _overlong(start, max_line_bytes)
            overlong: _Prepared = (
                start,
                1,
                0,
                1,
                [(problem.code, problem.message, start, None)],
                [],
            )
            emit(overlong)
            last_line = start
            continue
        last_line = start + len(lines) - 1
        summary = ScanSummary(messages=len(lines))
        explained: list[Problem] = []
        slices: list[Any] = []
        if columns:
            valid = 0
            for offset in range(0, len(lines), _THREAD_SLICE):
                part_valid, part_columns = _slice_columns(
                    lines[offset : offset + _THREAD_SLICE], start + offset, summary, explained
                )
                valid += part_valid
                slices.append((offset, _packed(part_columns)))
        else:
            valid = _count_lines(lines, start, summary, explained.append)
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


def _take_parts(
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
                _report_batch(explained, found, summary, on_problem)
            else:
                raise WorkerFailed(f"the worker process for {worker.what} handed back no end")
    finally:
        _stop(workers)
    return valid


def _thread_record(
    thread: ThreadChecker, record: Record, summary: ScanSummary, on_problem: ProblemSink
) -> None:
    if record.ok:
        found: Sequence[Problem] = thread.add(record.message, record.line)
    else:
        found = thread.note_invalid(record.message, line=record.line)
    summary.problems += len(found)
    for problem in found:
        on_problem(problem)


def _thread_lines(
    lines: list[bytes],
    start: int,
    summary: ScanSummary,
    on_problem: ProblemSink,
    on_message: MessageSink | None,
    thread: ThreadChecker,
) -> int:
    """:func:`_count_lines` with the checks across messages: every line gives the thread
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
    # Slices small enough that a slice's decoded lines stay in the CPU caches while its
    # columns are read and checked.
    for offset in range(0, len(lines), _THREAD_SLICE):
        part = lines[offset : offset + _THREAD_SLICE]
        slice_valid, columns = _slice_columns(part, start + offset, summary, explained)
        valid += slice_valid
        found += thread.add_batch(columns, start + offset)
    _report_batch(explained, found, summary, on_problem)
    return valid


def _report_batch(
    explained: list[Problem], found: list[Problem], summary: ScanSummary, on_problem: ProblemSink
) -> None:
    """A read's problems in line order: those of its lines, then the thread checks'."""
    summary.problems += len(found)
    if explained and found:
        found = sorted(explained + found, key=_problem_line)
    for problem in found or explained:
        on_problem(problem)


def _slice_columns(
    lines: list[bytes], start: int, summary: ScanSummary, explained: list[Problem]
) -> tuple[int, Columns]:
    """How many of ``lines`` are valid, and their thread columns; the problems of the
    others go to ``explained``."""
    shapes, doubtful = decode_lines(lines)
    ids, codes, refs, sessions, seqs = [list(map(get, shapes)) for get in _COLUMNS]
    # A doubtful line's row is rewritten: a valid message's fields, or what can be read
    # of an invalid one (or a blank line).
    valid = len(lines) - len(doubtful)
    for index in doubtful:
        line, number = lines[index], start + index
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            _settle(_Unparsed(error), number, line, summary, explained.append)
            row = salvaged_fields(None, line)
        else:
            if _surely(msg, line) or _settle(msg, number, line, summary, explained.append):
                row = thread_fields(msg)
                valid += 1
            else:
                row = salvaged_fields(msg, line)
        ids[index], codes[index], refs[index], sessions[index], seqs[index] = row
    return valid, (ids, codes, refs, sessions, seqs)


_COLUMNS = [attrgetter(name) for name in ("id", "code", "refers_to", "session_id", "seq")]


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
        _settle(_Unparsed(error), number, line, summary, on_problem)
        _report(thread.note_invalid(None, line, number), summary, on_problem)
        return 0
    if not _surely(msg, line) and not _settle(msg, number, line, summary, on_problem):
        _report(thread.note_invalid(msg, line, number), summary, on_problem)
        return 0
    if on_message is not None:
        on_message(msg, number)
    _report(thread.add(msg, number), summary, on_problem)
    return 1


def _surely(msg: Any, line: bytes) -> bool:
    """``msg``, parsed from ``line``, is surely a valid message and the line gives no
    key twice."""
    return is_surely_valid(msg) and not may_repeat_keys(line, msg)


def _report(found: Sequence[Problem], summary: ScanSummary, on_problem: ProblemSink) -> None:
    summary.problems += len(found)
    for problem in found:
        on_problem(problem)


def _count_lines(
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
            msg = _Unparsed(error)
        else:
            if _surely(msg, line):  # a shape the line check leaves to the dict path
                valid += 1
                continue
        valid += _settle(msg, start + index, line, summary, on_problem)
    return valid


def _settle(
    result: Any, number: int, line: bytes, summary: ScanSummary, on_problem: ProblemSink
) -> bool:
    """Report what is wrong with a line the fast check doubted; True if it is valid after
    all (a shape the fast check leaves to the full validator)."""
    if result.__class__ is _Unparsed:
        if not _is_framing(line):
            summary.problems += 1
            on_problem(_unparsable(number, line, result.error))
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


def _count(
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
        self.path = Path(path)
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
