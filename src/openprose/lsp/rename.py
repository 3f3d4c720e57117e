"""Rename: every occurrence of a name — its definition, its uses, `{name}` in strings, and
for a program's input or output the argument names and output fields of its importers."""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from openprose.lsp.convert import range_of
from openprose.lsp.documents import Analysis, Documents
from openprose.lsp.index import Definition, Reference
from openprose.lsp.navigation import references, target_at
from openprose.scanner import IDENT_PATTERN, KEYWORDS

_NAME = re.compile(IDENT_PATTERN)


class RenameError(ValueError):
    """The rename cannot be done; the message says why (shown to the user)."""


def prepare_rename(store: Documents, analysis: Analysis, offset: int) -> lsp.Range | None:
    """The name under ``offset`` when it can be renamed, else None."""
    spot = analysis.index.at(offset)
    if not isinstance(spot, Definition | Reference) or target_at(store, analysis, offset) is None:
        return None
    if analysis.source.text[spot.span.start : spot.span.end] != spot.name:
        return None  # an import named by its path: there is no name to rename
    return range_of(analysis.lines, spot.span)


def rename(store: Documents, analysis: Analysis, offset: int, new_name: str) -> lsp.WorkspaceEdit:
    if not _NAME.fullmatch(new_name):
        raise RenameError(f"`{new_name}` is not a name (letters, digits, `_`, inner `-`)")
    if new_name in KEYWORDS:
        raise RenameError(f"`{new_name}` is a keyword")
    if prepare_rename(store, analysis, offset) is None:
        raise RenameError("nothing to rename here")
    changes: dict[str, list[lsp.TextEdit]] = {}
    for location in references(store, analysis, offset, include_declaration=True):
        changes.setdefault(location.uri, []).append(lsp.TextEdit(location.range, new_name))
    return lsp.WorkspaceEdit(changes=changes)
