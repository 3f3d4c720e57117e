"""Document formatting: exactly ``prose fmt``, sent as the few line edits that produce it.

A document with syntax errors is left alone, as ``prose fmt`` leaves such a file. Edits are
computed line by line (unchanged lines are not touched, so the editor keeps the cursor and
marks on them); applying them yields ``format_source``'s text.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from lsprotocol import types as lsp

from openprose.formatter import format_source
from openprose.lsp.documents import Analysis


def format_document(analysis: Analysis) -> list[lsp.TextEdit] | None:
    """The edits, ``[]`` when already formatted, None when the document cannot be formatted."""
    changes = _changes(analysis)
    if changes is None:
        return None
    old, found = changes
    return [_edit(analysis, old, first, stop, new) for first, stop, new in found]


def format_range(analysis: Analysis, lines: range) -> list[lsp.TextEdit] | None:
    """The edits of `format_document` on ``lines`` (0-based): formatting a selection leaves
    the rest as it is. A change replacing lines one for one is cut into single lines; one
    that joins or splits lines is kept whole when it touches the selection."""
    changes = _changes(analysis)
    if changes is None:
        return None
    old, found = changes
    edits = []
    for first, stop, new in found:
        if stop - first == len(new):
            edits += [
                _edit(analysis, old, line, line + 1, [text])
                for line, text in zip(range(first, stop), new, strict=True)
                if line in lines
            ]
        elif first < lines.stop and (stop > lines.start or first >= lines.start):
            edits.append(_edit(analysis, old, first, stop, new))
    return edits


Change = tuple[int, int, list[str]]  # old lines [first, stop) become these lines


def _changes(analysis: Analysis) -> tuple[list[str], list[Change]] | None:
    if not analysis.result.ok:
        return None
    old_text = analysis.source.text
    new_text = format_source(analysis.result)
    if new_text == old_text:
        return [], []
    old = _lines(old_text)
    new = _lines(new_text)
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    return old, [
        (i1, i2, new[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
    ]


def _edit(
    analysis: Analysis, old: list[str], first: int, stop: int, new: list[str]
) -> lsp.TextEdit:
    return lsp.TextEdit(
        range=lsp.Range(_line_start(analysis, old, first), _line_start(analysis, old, stop)),
        new_text="".join(new),
    )


def _line_start(analysis: Analysis, old: list[str], line: int) -> lsp.Position:
    """The start of a 0-based line, or the very end of the text past its last line."""
    if line < len(old) or not old or old[-1].endswith("\n"):
        return lsp.Position(line, 0)
    last = len(old) - 1
    return lsp.Position(last, analysis.lines.units(last, len(old[-1])))


def _lines(text: str) -> list[str]:
    """Lines with their endings, split at LF only (as the scanner counts lines)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
