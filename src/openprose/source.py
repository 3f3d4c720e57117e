"""Source text and spans: where every token, node and diagnostic lives in a file."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field


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
