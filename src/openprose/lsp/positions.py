"""Positions: the front end counts characters (code points), LSP clients count code units.

The encoding is agreed at initialisation: UTF-16 (LSP's default, where a character outside the
Basic Multilingual Plane counts twice), UTF-8 (bytes) or UTF-32 (code points, as we count).
ASCII lines — nearly all of a program — are converted without counting.
"""

from __future__ import annotations

from dataclasses import dataclass

from openprose.source import SourceFile, Span


@dataclass(frozen=True, slots=True)
class Lines:
    """Converts between character offsets of ``source`` and (line, unit) client positions,
    both 0-based as LSP has them."""

    source: SourceFile
    encoding: str = "utf-16"

    def _line(self, line: int) -> str:
        return self.source.line_text(line + 1)

    def units(self, line: int, column: int) -> int:
        """Client units before the 0-based character ``column`` of a 0-based ``line``."""
        if self.encoding == "utf-32":
            return column
        text = self._line(line)[:column]
        if text.isascii():
            return column
        return sum(_width(c, self.encoding) for c in text)

    def column(self, line: int, units: int) -> int:
        """The 0-based character column that ``units`` client units into a line reach."""
        text = self._line(line)
        if self.encoding == "utf-32" or text.isascii():
            return max(0, min(units, len(text)))
        seen = 0
        for index, char in enumerate(text):
            if seen >= units:
                return index
            seen += _width(char, self.encoding)
        return len(text)

    def offset(self, line: int, units: int) -> int:
        """Character offset of a client position (clamped into the text)."""
        starts = self.source.line_starts
        if line < 0:
            return 0
        if line >= len(starts):
            return len(self.source.text)
        return starts[line] + self.column(line, units)

    def start(self, span: Span) -> tuple[int, int]:
        return span.line - 1, self.units(span.line - 1, span.column - 1)

    def end(self, span: Span) -> tuple[int, int]:
        return span.end_line - 1, self.units(span.end_line - 1, span.end_column - 1)

    def position_of(self, offset: int) -> tuple[int, int]:
        line, column = self.source.position(offset)
        return line - 1, self.units(line - 1, column - 1)


def _width(char: str, encoding: str) -> int:
    """Code units of one character in the client's encoding."""
    code = ord(char)
    if encoding == "utf-8":
        return 1 if code < 0x80 else 2 if code < 0x800 else 3 if code < 0x10000 else 4
    return 2 if code > 0xFFFF else 1
