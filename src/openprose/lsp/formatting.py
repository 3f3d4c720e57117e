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
    if not analysis.result.ok:
        return None
    old_text = analysis.source.text
    new_text = format_source(analysis.result)
    if new_text == old_text:
        return []
    old = _lines(old_text)
    new = _lines(new_text)
    edits: list[lsp.TextEdit] = []
    matcher = SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        edits.append(
            lsp.TextEdit(
                range=lsp.Range(_line_start(analysis, old, i1), _line_start(analysis, old, i2)),
                new_text="".join(new[j1:j2]),
            )
        )
    return edits


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
