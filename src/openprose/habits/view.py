"""What every habit reads (the parser's tokens through ``TokenView``) and how the fixes write
text as a string literal."""

from __future__ import annotations

import re
from typing import Protocol

from openprose.scanner import (
    DEDENT,
    EOF,
    IDENT_PATTERN,
    INDENT,
    NEWLINE,
    Token,
)
from openprose.source import SourceFile

LAYOUT = frozenset((NEWLINE, INDENT, DEDENT, EOF))
IDENTIFIER = re.compile(IDENT_PATTERN)


class TokenView(Protocol):
    """What a habit reads: the source and its tokens (the parser is one)."""

    @property
    def source(self) -> SourceFile: ...
    @property
    def tokens(self) -> list[Token]: ...
    @property
    def kinds(self) -> list[str]: ...


# --- writing text as a string literal (what most fixes insert) ---------------------------------


def quote(text: str) -> str:
    """``text`` as a string literal."""
    for char, escape in _ESCAPED:
        text = text.replace(char, escape)
    return '"' + text + '"'


_ESCAPED = (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\t", "\\t"), ("{", "\\{"))


def plain_quote(text: str) -> str:
    """``text`` as a string literal that keeps its `{name}` interpolations."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
