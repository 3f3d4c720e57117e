"""Source text and spans: where every token, node and diagnostic lives in a file; and reading
a program file into one (`read_program`, `decode_program`)."""

from __future__ import annotations

import os
import stat
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Span:
    """A half-open range of a source file; lines and columns are 1-based, columns count characters.

    ``end_line``/``end_column`` point one past the last character, so a one-character token at
    line 3, column 5 has ``end_column == 6``.
    """

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int

    def cover(self, other: Span) -> Span:
        """The smallest span holding both ``self`` and ``other``."""
        first = self if self.start <= other.start else other
        last = self if self.end >= other.end else other
        return Span(first.start, last.end, first.line, first.column, last.end_line, last.end_column)


def _span_init() -> None:
    """Give `Span` an `__init__` setting its slots through their descriptors: the generated
    one calls `object.__setattr__` per field (frozen), and the front end builds about ten
    spans a line (check35f: ~7% of `prose check`). Same signature; still frozen."""
    names = ("start", "end", "line", "column", "end_line", "end_column")
    setters = (Span.__dict__[name].__set__ for name in names)
    set_start, set_end, set_line, set_column, set_end_line, set_end_column = setters
    generated = Span.__init__

    def __init__(
        self: Span, start: int, end: int, line: int, column: int, end_line: int, end_column: int
    ) -> None:
        set_start(self, start)
        set_end(self, end)
        set_line(self, line)
        set_column(self, column)
        set_end_line(self, end_line)
        set_end_column(self, end_column)

    __init__.__qualname__ = generated.__qualname__
    __init__.__doc__ = generated.__doc__
    Span.__init__ = __init__  # type: ignore[method-assign]


_span_init()


# Span's slots without its frozenness: a fresh instance of this class takes plain attribute
# stores (specialized by the interpreter, no descriptor calls), and then becomes a `Span`
# (same slots, same layout). `new_span` is how the scanner and parser, which build ~3 spans a
# line, make theirs: ~2.2 k instructions a span against ~5.8 k through `Span(...)`.
_OpenSpan = type("_OpenSpan", (), {"__slots__": Span.__slots__})


def new_span(start: int, end: int, line: int, column: int, end_line: int, end_column: int) -> Span:
    """``Span(start, end, line, column, end_line, end_column)``, built faster."""
    span = _OpenSpan()
    span.start = start
    span.end = end
    span.line = line
    span.column = column
    span.end_line = end_line
    span.end_column = end_column
    span.__class__ = Span
    return span  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class SourceFile:
    """Decoded program text plus the line table needed to turn offsets into positions."""

    path: str
    text: str
    line_starts: tuple[int, ...] = field(repr=False, default=())

    @classmethod
    def from_text(cls, text: str, path: str = "<string>") -> SourceFile:
        starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        return cls(path, text, tuple(starts))

    def position(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        index = bisect_right(self.line_starts, offset) - 1
        return index + 1, offset - self.line_starts[index] + 1

    def span(self, start: int, end: int) -> Span:
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        return Span(start, end, line, column, end_line, end_column)

    def line_text(self, line: int) -> str:
        """The text of a 1-based line, without its line ending."""
        if not 1 <= line <= len(self.line_starts):
            return ""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r\n")


# --- reading a program file ------------------------------------------------------------------

# The longest programs people write are tens of KiB; a file over this is not a program (a log
# or a data file named by mistake) and would take minutes and gigabytes to scan.
PROGRAM_LIMIT = 64 * 1024 * 1024


class Unreadable(Exception):
    """A program file that cannot be read (``code`` E118) or is not UTF-8 (E100); ``span``
    says where (the first offending byte for E100)."""

    def __init__(self, code: str, message: str, span: Span, path: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.span = span
        self.path = path


def read_program(path: str | os.PathLike[str]) -> SourceFile:
    """Read and decode a program file; raises ``Unreadable``."""
    name = str(path)
    try:
        if _endless(path):
            raise OSError(0, "not a regular file")
        with Path(path).open("rb") as handle:
            data = handle.read(PROGRAM_LIMIT + 1)  # a larger file is refused unread
    except OSError as error:
        reason = error.strerror or type(error).__name__
        reason = reason[:1].lower() + reason[1:]
        raise _unreadable(f"Cannot read file: {reason}", name) from None
    return decode_program(data, name)


def decode_program(data: bytes, path: str = "<string>") -> SourceFile:
    """Decode program bytes as UTF-8 (BOM tolerated); raises ``Unreadable`` (E100 at the
    first offending byte) for anything else."""
    if len(data) > PROGRAM_LIMIT:
        limit = f"{PROGRAM_LIMIT // (1024 * 1024)} MiB"
        raise _unreadable(f"Cannot read file: larger than the {limit} limit for a program", path)
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    data = data[bom:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        # Position the problem in a lossy decoding so the line and column are meaningful.
        prefix = data[: error.start].decode("utf-8", errors="replace")
        lossy = SourceFile.from_text(
            prefix + data[error.start :].decode("utf-8", errors="replace"), path
        )
        at = len(prefix)
        message = (
            f"File is not valid UTF-8 (byte 0x{data[error.start]:02x} at offset"
            f" {error.start + bom});"
            " OpenProse source must be UTF-8"
        )
        raise Unreadable("E100", message, lossy.span(at, at + 1), path) from None
    return SourceFile.from_text(text, path)


def _unreadable(message: str, name: str) -> Unreadable:
    return Unreadable("E118", message, SourceFile.from_text("", name).span(0, 0), name)


def _endless(path: str | os.PathLike[str]) -> bool:
    """A character or block device or a socket: reading it may never end (``/dev/zero``)
    or block forever. FIFOs are read (``prose check <(generate)``); directories fail in
    ``read_bytes`` with their own message."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # read_bytes reports why
    return stat.S_ISCHR(mode) or stat.S_ISBLK(mode) or stat.S_ISSOCK(mode)
