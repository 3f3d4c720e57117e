"""The OpenProse parser: hand-written recursive descent over the scanner's token list.

``parse(source)`` always returns a ``ParseResult``; every problem is a diagnostic, never an
exception. Errors are contained per statement (and per property line and choice option): the
broken statement becomes an ``Invalid`` node, the parser skips to the end of its logical line
(and through any indented block hanging off it, still parsing that block to report independent
errors inside), then carries on. Decisions: docs/decisions.md, OpenProse: scanner and parser.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path

from openprose import nodes as n
from openprose.codes import diagnostic
from openprose.depth import deep_recursion
from openprose.diagnostics import Diagnostic
from openprose.parser.constructs import Constructs
from openprose.parser.expressions import Expressions
from openprose.parser.sessions import Sessions
from openprose.parser.shapes import Shapes
from openprose.parser.statements import Statements
from openprose.scanner import MAX_DIAGNOSTICS
from openprose.source import (
    PROGRAM_LIMIT,
    SourceFile,
    Unreadable,
    decode_program,
    read_program,
)

__all__ = ["PROGRAM_LIMIT", "ParseResult", "decode_source", "parse", "parse_text", "read_source"]


@dataclass(frozen=True, slots=True)
class ParseResult:
    program: n.Program
    diagnostics: tuple[Diagnostic, ...]
    source: SourceFile

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


class _Parser(Statements, Expressions, Sessions, Constructs, Shapes):
    """The whole grammar (each part in its own module)."""


def _promote_to_oldest_generation() -> None:
    """Move every tracked object (chiefly the tree just built) to the oldest GC generation
    without scanning it: the tree is long-lived, so walking it through the young generations
    first is wasted work (~25% of parse + check). Full collections still see it. Skipped when
    the application has frozen objects itself, since ``unfreeze`` would release those."""
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def parse(source: SourceFile) -> ParseResult:
    """Parse ``source``; never raises. Diagnostics come back sorted by position."""
    # The parser allocates millions of small objects and frees none of them while it runs,
    # so cyclic-GC passes over the growing heap are pure overhead (parse + check ran ~1.6x
    # slower with the collector on).
    collecting = gc.isenabled()
    gc.disable()
    try:
        with deep_recursion():
            parser = _Parser(source)
            program = parser.program()
    finally:
        if collecting:
            _promote_to_oldest_generation()
            gc.enable()
    diagnostics = parser.diagnostics
    diagnostics.sort(key=lambda d: (d.span.start, d.span.end))
    if len(diagnostics) >= MAX_DIAGNOSTICS:
        message = f"Too many errors; stopped reporting after {MAX_DIAGNOSTICS}"
        last = diagnostics[-1].span
        diagnostics.append(diagnostic("E117", message, last, source.path))
    return ParseResult(program=program, diagnostics=tuple(diagnostics), source=source)


def parse_text(text: str, path: str = "<string>") -> ParseResult:
    return parse(SourceFile.from_text(text, path))


def read_source(path: str | Path) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Read and decode a program file. UTF-8 is required (a leading BOM is tolerated); a file
    that cannot be read or decoded yields ``None`` and a positioned diagnostic."""
    try:
        return read_program(path), []
    except Unreadable as problem:
        return None, [_diagnostic(problem)]


def decode_source(
    data: bytes, path: str = "<string>"
) -> tuple[SourceFile | None, list[Diagnostic]]:
    """Decode program bytes as UTF-8 (BOM tolerated); non-UTF-8 input is an E100 diagnostic
    positioned at the first offending byte."""
    try:
        return decode_program(data, path), []
    except Unreadable as problem:
        return None, [_diagnostic(problem)]


def _diagnostic(problem: Unreadable) -> Diagnostic:
    return diagnostic(problem.code, problem.message, problem.span, problem.path)
