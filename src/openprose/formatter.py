"""``prose fmt``: the parsed program in canonical layout, with its comments kept.

The tree is printed exactly as parsed (no hoisting, no reordering, no sugar expansion), so the
output re-parses to an equal AST. Comments come back by position:

* a comment after code on the same line trails the output line that holds that code;
* a comment on its own line goes before the first output line that starts after it, at that
  line's indentation — or, when it sat deeper than that line (the end of a block), at the
  indentation of the block it closed.

Blank lines: at most one is kept where the source had at least one, never right after a line
that opens a block.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import TYPE_CHECKING

from openprose.diagnostics import has_errors
from openprose.printer import Line, Printer, render

if TYPE_CHECKING:
    from openprose.nodes import Comment
    from openprose.parser import ParseResult
    from openprose.source import SourceFile


def format_source(result: ParseResult) -> str:
    """The formatted text of a parsed file. A file with syntax errors is returned unchanged:
    the formatter never rewrites what it could not read."""
    if has_errors(result.diagnostics):
        return result.source.text
    lines = Printer().program(result.program)
    return render(_weave(lines, result.program.comments, result.source))


def _weave(lines: list[Line], comments: tuple[Comment, ...], source: SourceFile) -> list[Line]:
    starts = _start_lines(lines)
    standalone: list[Comment] = []
    trailing: dict[int, list[str]] = {}
    for comment in comments:
        before = source.line_text(comment.span.line)[: comment.span.column - 1]
        target = bisect_right(starts, comment.span.line) - 1
        if before.strip() and target >= 0:
            trailing.setdefault(target, []).append(_comment_text(comment))
        else:
            standalone.append(comment)
    standalone.sort(key=lambda c: c.span.start)

    out: list[Line] = []
    pending = 0  # index of the next standalone comment to place

    def place(item: Line, line: int) -> None:
        if out and _blank_before(source, line) and out[-1].child_level is None and out[-1].text:
            out.append(Line(0, "", None))
        out.append(item)

    for index, line in enumerate(lines):
        start = starts[index]
        while pending < len(standalone) and standalone[pending].span.line < start:
            comment = standalone[pending]
            level = _comment_level(comment, lines, index)
            place(Line(level, _comment_text(comment), comment.span), comment.span.line)
            pending += 1
        if index in trailing:
            line.text += "  " + "  ".join(trailing[index])
        place(line, start)
    for comment in standalone[pending:]:
        level = _comment_level(comment, lines, len(lines))
        place(Line(level, _comment_text(comment), comment.span), comment.span.line)
    return out


def _start_lines(lines: list[Line]) -> list[int]:
    """Source line each output line starts at; invented lines inherit the previous one's."""
    starts: list[int] = []
    previous = 0
    for line in lines:
        previous = line.anchor.line if line.anchor is not None else previous
        starts.append(previous)
    return starts


def _comment_text(comment: Comment) -> str:
    return "#" + comment.text.rstrip()


def _comment_level(comment: Comment, lines: list[Line], next_index: int) -> int:
    """Indentation level for an own-line comment placed before ``lines[next_index]``."""
    column = comment.span.column
    following = lines[next_index] if next_index < len(lines) else None
    if following is not None and (following.anchor is None or column <= following.anchor.column):
        return following.level
    for i in range(next_index - 1, -1, -1):
        earlier = lines[i]
        if earlier.anchor is None or earlier.anchor.column > column:
            continue
        if earlier.anchor.column < column and earlier.child_level is not None:
            return earlier.child_level
        return earlier.level
    return 0


def _blank_before(source: SourceFile, line: int) -> bool:
    return line > 1 and not source.line_text(line - 1).strip()
