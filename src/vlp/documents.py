"""Telling one JSON document (an object, an array, pretty-printed values one after
another, Markdown around fenced JSON) from NDJSON, and the records of each.
"""

from __future__ import annotations

import codecs
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import replace
from operator import attrgetter

import orjson

from vlp._keyscan import may_repeat_keys
from vlp.duplicates import DuplicateKey, find_duplicate_keys
from vlp.errors import Problem
from vlp.fenced import only_lines, prose_problem_text, read_markdown
from vlp.line_problems import (
    Record,
    json_error,
    line_record,
    not_utf8,
    overlong,
    record_of,
    unparsable,
    with_duplicates,
)
from vlp.line_reader import (
    CHUNK_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    FENCE_LINE,
    Reader,
    Replay,
    Source,
    blank_fences,
    blank_opening_fence,
    first_chunk,
    is_framing,
    line_batches,
    opened_source,
    read_at_most,
)

_PROBE_BYTES = 16 * 1024 * 1024  # an object spread over lines is looked for in inputs up to this
_DOCUMENT_BYTES = _PROBE_BYTES  # a JSON document is parsed whole up to this; beyond, streamed
_JSON_SPACE = " \t\r\n"


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


def detect(
    stream: Reader, chunk_bytes: int, max_line_bytes: int
) -> tuple[Iterable[Record] | None, Reader, bytes]:
    """Tell one JSON document from NDJSON: ``(records, _, _)`` for a document, else
    ``(None, stream, first chunk)`` to read NDJSON from.

    A document opens with '[' or with '{' alone on its line. Input opening with '{' whose
    (complete) first line is not JSON by itself may be an object pretty-printed with its
    first key on the brace's line: if the whole input is at most 16 MiB and parses as one
    document, it is one. Anything else is NDJSON.
    """
    first = first_chunk(stream, chunk_bytes, max_line_bytes)
    if (b"```" in first or b"~~~" in first) and FENCE_LINE.search(first) is not None:
        data = read_at_most(stream, first, _PROBE_BYTES)
        markdown = _markdown_records(data) if len(data) <= _PROBE_BYTES else None
        if markdown is not None:
            return markdown, io.BytesIO(b""), b""
        stream = Replay(data, stream)
        first = first_chunk(stream, chunk_bytes, max_line_bytes)
    first = blank_opening_fence(first)
    rest: Reader
    if _looks_like_json_document(first):
        data = read_at_most(stream, first, _DOCUMENT_BYTES)
        if len(data) > _DOCUMENT_BYTES:  # too big to parse whole: element by element
            return _streamed_array(data, stream, max_line_bytes), io.BytesIO(b""), b""
        data = blank_fences(data)
        records = _document_or_ndjson(data)
        rest = io.BytesIO(data)
    elif (
        first.lstrip().startswith(b"{")
        and b"\n" in first  # a whole first line, not an over-long one
        and not _first_line_is_json(first)
    ):
        data = read_at_most(stream, first, _PROBE_BYTES)
        records = None
        if len(data) <= _PROBE_BYTES:
            records = list(_document_records(blank_fences(data)))
            if len(records) == 1 and records[0].message is None:
                records = None  # not a document either: NDJSON reports each bad line
        rest = Replay(data, stream)
    else:
        return None, stream, first
    if records is not None:
        return records, rest, b""
    return None, rest, first_chunk(rest, chunk_bytes, max_line_bytes)


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
        problem = not_utf8(1, data, error)
        yield Record(problem.line or 1, None, [problem])
        return
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        sequence = _sequence_records(text)
        if sequence is None:
            yield Record(error.lineno, None, [json_error(error.lineno, error)])
        else:
            yield from sequence
        return
    start = len(text) - len(text.lstrip())
    line = text.count("\n", 0, start) + 1
    repeated = _repeated_in(text, start, data)
    if not isinstance(document, list):
        yield with_duplicates(record_of(line, document), text, repeated)
        return
    # Problems also name the element, since several may share a line.
    lines = _element_lines(text, start)
    for element, value in enumerate(document):
        line = next(lines, line)
        record = record_of(line, value)
        record = with_duplicates(record, text, _of_element(repeated, element))
        record.problems = [
            replace(problem, message=f"element [{element}]: {problem.message}")
            for problem in record.problems
        ]
        yield record


def _repeated_in(text: str, start: int, data: bytes) -> list[DuplicateKey]:
    """The repeated keys of the value at ``start`` of ``text`` (``data`` encoded), looked
    for only when the key scan says there may be some."""
    return find_duplicate_keys(text, start) if may_repeat_keys(data) else []


def _of_element(repeated: list[DuplicateKey], element: int) -> list[DuplicateKey]:
    """The repeated keys inside element ``element`` of an array, named from the element."""
    prefix = f"[{element}]"
    return [
        replace(duplicate, path=duplicate.path[len(prefix) :].lstrip("."))
        for duplicate in repeated
        if duplicate.path.startswith((prefix + ".", prefix + "["))
    ]


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
            problem = json_error(at, error)
        except RecursionError:
            if not records:
                return None
            problem = Problem("VLP001", "invalid JSON: nested too deeply", line)
        else:
            repeated = _repeated_in(text, position, text[position:end].encode())
            records.append(with_duplicates(record_of(line, value), text, repeated))
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

    def __init__(self, head: bytes, stream: Reader) -> None:
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


def _streamed_array(head: bytes, stream: Reader, max_element_bytes: int) -> Iterator[Record]:
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
                return overlong(window.line, max_element_bytes)
            line = window.line + window.text.count("\n", window.pos, error.pos)
            if not window.more():
                return json_error(line, error)
        except RecursionError:
            why = "invalid JSON: nested too deeply; reading stopped"
            return Problem("VLP001", why, window.line)


def _element_record(window: _ArrayText, end: int, element: int) -> Record:
    text = window.text[window.pos : end]
    data = text.encode("utf-8")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        record = Record(window.line, None, [json_error(window.line, error)])
    else:
        # Columns of repeated keys count from the start of the element's first line.
        lead = " " * (window.pos - (window.text.rfind("\n", 0, window.pos) + 1))
        repeated = _repeated_in(lead + text, len(lead), data)
        record = with_duplicates(
            record_of(window.line, value), lead + text, repeated, first_line=window.line
        )
    record.problems = [
        replace(problem, message=f"element [{element}]: {problem.message}")
        for problem in record.problems
    ]
    return record


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
    with opened_source(source) as opened:
        records, stream, first = detect(opened, chunk_bytes, max_line_bytes)
        if records is not None:
            yield from records
            return
        for start, lines in line_batches(stream, first, max_line_bytes, chunk_bytes):
            if lines is None:
                yield Record(start, None, [overlong(start, max_line_bytes)])
                continue
            number = start - 1
            for line in lines:
                number += 1
                try:
                    msg = loads(line)
                except orjson.JSONDecodeError as error:
                    if not is_framing(line):
                        yield Record(number, None, [unparsable(number, line, error)])
                    continue
                yield line_record(number, line, msg)
