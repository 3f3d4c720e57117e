"""Where the cursor sits inside a string literal: in its text, or in an interpolation being
typed (``{na``, ``{result.su``).

Read from the scanner's tokens of the current text, not from the line: a ``\"\"\"`` prompt
spans lines whose own text holds no quote, and a string being typed is usually unterminated
(the scanner's ERROR token, which still starts at the opening quote).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openprose.lsp.documents import Analysis
from openprose.scanner import ERROR, STRING

# A string body up to the cursor, piece by piece: an escape (``\{`` is literal text), a brace
# and the name path typed after it, or text.
_PIECE = re.compile(r"\\[\s\S]?|\{(?P<path>[\w.-]*)|[^\\{]+")
_PATH = re.compile(r"(?:[A-Za-z_][\w-]*(?:\.(?:[A-Za-z_][\w-]*)?)*)?")


@dataclass(frozen=True, slots=True)
class StringSpot:
    """The cursor is inside a string. ``path`` holds the names typed after an interpolation's
    open brace (``("result", "su")`` for ``{result.su``, ``("",)`` right after ``{``); None
    when the cursor is in plain text, an escaped ``\\{`` included."""

    start: int  # where the string's opening quote is
    path: tuple[str, ...] | None


def string_at(analysis: Analysis, offset: int) -> StringSpot | None:
    """The string holding ``offset`` (between its quotes), or None outside strings."""
    token = analysis.token_at(offset)
    if token is None:
        return None
    kind, text, start, end = token[0], token[1], token[2], token[3]
    if kind == STRING:
        if not start < offset < end:
            return None  # on the opening quote, or after the closing one
    elif not (kind == ERROR and text.startswith('"') and start < offset):
        return None
    opening = 3 if text.startswith('"""') else 1
    body = analysis.source.text[start + opening : offset] if offset >= start + opening else ""
    return StringSpot(start, _open_path(body))


def _open_path(body: str) -> tuple[str, ...] | None:
    """The path after an interpolation's brace left open at the end of ``body``."""
    last = None
    for last in _PIECE.finditer(body):
        pass
    if last is None or last.group("path") is None or last.end() != len(body):
        return None
    path = last.group("path")
    if not _PATH.fullmatch(path):
        return None
    return tuple(path.split("."))
