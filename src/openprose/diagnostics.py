"""Diagnostics are values: every stage returns them, nothing raises them."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from openprose.source import SourceFile, Span

# Excerpts show at most this many characters of a long line.
EXCERPT_WIDTH = 120
# Control characters in an excerpt: a tab becomes a space, the others a question mark.
_VISIBLE = {c: "?" for c in (*range(0x20), *range(0x7F, 0xA0))} | {0x09: " "}


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    # A check that could not run yet (it needs the outside world) and is deferred to run time.
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text of ``span`` with ``text`` (an insertion when the span is empty)."""

    span: Span
    text: str

    def to_dict(self) -> dict[str, Any]:
        span = self.span
        return {
            "start": span.start,
            "end": span.end,
            "line": span.line,
            "column": span.column,
            "end_line": span.end_line,
            "end_column": span.end_column,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class Fix:
    """A mechanical rewrite that resolves a diagnostic and keeps the program's meaning: text
    edits that never overlap, so an editor can offer it as a quick fix and ``prose check
    --fix`` can apply it (``openprose.fixes``)."""

    title: str
    edits: tuple[Edit, ...]
    # False for a likely but unproven fix (a misspelled keyword's nearest word): an editor may
    # offer it; `prose check --fix` applies it only with --unsafe-fixes.
    safe: bool = True

    @classmethod
    def nearest_word(cls, span: Span, word: str, guess: str) -> Fix:
        """Replace a misspelled name with the nearest known one: likely, not proven (unsafe),
        so `prose check --fix` applies it only with --unsafe-fixes; an editor offers it."""
        return cls(f"replace `{word}` with `{guess}`", (Edit(span, guess),), safe=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "safe": self.safe,
            "edits": [e.to_dict() for e in self.edits],
        }


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span
    path: str = "<string>"
    # The rule of the language reference the diagnostic rests on, and one line saying how to
    # resolve it (defaults come from ``openprose.codes``; sites may say something sharper).
    rule: str = ""
    help: str = ""
    fix: Fix | None = None

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    @property
    def end_line(self) -> int:
        return self.span.end_line

    @property
    def end_column(self) -> int:
        return self.span.end_column

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
            "rule": self.rule,
            "help": self.help,
            "fix": None if self.fix is None else self.fix.to_dict(),
        }

    def excerpt(self, source: SourceFile) -> str:
        """The source line and a caret run under the span (clipped to that line).

        Control characters are shown as ``?`` (a tab as a space) so the caret lines up and
        nothing in the file can drive the terminal; a line longer than ``EXCERPT_WIDTH`` is
        cut to a window around the span, marked with ``...`` at the cut ends."""
        text = source.line_text(self.line)
        if self.end_line == self.line:
            width = max(1, self.end_column - self.column)
        else:
            width = max(1, len(text) - self.column + 1)
        width = max(1, min(width, len(text) - self.column + 1))
        offset = self.column - 1
        if len(text) > EXCERPT_WIDTH:
            start = max(0, min(offset - EXCERPT_WIDTH // 3, len(text) - EXCERPT_WIDTH))
            end = start + EXCERPT_WIDTH
            text = ("..." if start else "") + text[start:end] + ("..." if end < len(text) else "")
            offset += (3 if start else 0) - start
            width = max(1, min(width, len(text) - offset))
        text = text.translate(_VISIBLE)
        return f"  {text}\n  {' ' * offset}{'^' * width}"

    def render(self, source: SourceFile) -> str:
        """The reference's Error Message Format: message line, source line, caret."""
        title = {"error": "Error", "warning": "Warning", "info": "Note"}[self.severity]
        return (
            f"{title} at line {self.line}, column {self.column}: {self.message}\n"
            f"{self.excerpt(source)}"
        )

    def render_cli(self, source: SourceFile) -> str:
        """``path:line:col: CODE message``, the caret excerpt, then the rule it rests on and
        how to fix it (one line each, when known)."""
        return (
            f"{self.path}:{self.line}:{self.column}: {self.code} {self.message}\n"
            f"{self.excerpt(source)}{self.notes()}"
        )

    def notes(self) -> str:
        """The ``rule:`` and ``help:`` lines shown under the excerpt (empty when unknown)."""
        text = ""
        if self.rule:
            text += f"\n  = rule: {self.rule}"
        if self.help:
            fixable = ""
            if self.fix is not None:
                fixable = (
                    " (fixable with `prose check --fix`)"
                    if self.fix.safe
                    else " (fix available: `prose check --fix --unsafe-fixes`)"
                )
            text += f"\n  = help: {self.help}{fixable}"
        return text


def has_errors(diagnostics: list[Diagnostic] | tuple[Diagnostic, ...]) -> bool:
    return any(d.is_error for d in diagnostics)
