"""Reading a byte stream as lines: large chunks split here, over-long lines cut, the
framing lines (blank, code fences) told apart; memory stays bounded by the chunk size plus
the maximum line length.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO, Protocol

from vlp._keyscan import split_lines

DEFAULT_MAX_LINE_BYTES = 1024 * 1024
CHUNK_BYTES = 1024 * 1024
_BOM = b"\xef\xbb\xbf"
_SNIFF_BYTES = 64 * 1024
# A Markdown code fence line (```json, ~~~): framing models and documents put around JSON,
# never a message, so it is skipped like a blank line (docs/decisions.md, "Conformance
# (protocol transcripts)").
_FENCE = re.compile(rb"[ \t]*(?:`{3,}|~{3,})[\w.+-]*[ \t]*\r?")
_LEADING_SPACE = re.compile(rb"\s*")
FENCE_LINE = re.compile(rb"^[ \t]*(?:`{3,}|~{3,})[\w.+-]*[ \t]*\r?$", re.MULTILINE)

Source = str | os.PathLike[str] | BinaryIO


class Reader(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class Replay:
    """Bytes already read from a stream, then the rest of the stream."""

    def __init__(self, head: bytes, rest: Reader) -> None:
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


def is_framing(line: bytes) -> bool:
    """A blank line or a code fence line: no message, not a problem."""
    return not line.strip() or _FENCE.fullmatch(line) is not None


def blank_fences(data: bytes) -> bytes:
    """``data`` with its code fence lines emptied (line numbers stay as they were)."""
    if b"```" not in data and b"~~~" not in data:
        return data
    return FENCE_LINE.sub(b"", data)


def blank_opening_fence(head: bytes) -> bytes:
    """``head`` with its first non-blank line emptied if that line is a code fence."""
    start = _LEADING_SPACE.match(head).end()  # type: ignore[union-attr]  # always matches
    end = head.find(b"\n", start)
    if end < 0 or _FENCE.fullmatch(head, start, end) is None:
        return head
    return head[:start] + head[end:]


@contextmanager
def opened_source(source: Source) -> Iterator[BinaryIO]:
    if isinstance(source, (str, os.PathLike)):
        if str(source) == "-":
            yield sys.stdin.buffer
            return
        with open(source, "rb") as stream:
            yield stream
    else:
        yield source


def line_batches(
    stream: Reader, first: bytes, max_line_bytes: int, chunk_bytes: int
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
        lines = split_lines(chunk)  # chunk.split(b"\n"), a fifth of the instructions
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


def first_chunk(stream: Reader, chunk_bytes: int, max_line_bytes: int) -> bytes:
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


def read_at_most(stream: Reader, head: bytes, limit: int) -> bytes:
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
