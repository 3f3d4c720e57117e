"""Positioned errors and violations shared by every PLSP module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def line_and_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of `offset` in `text`."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


class ParseError(ValueError):
    """Malformed PLSP text, with the exact place where reading stopped."""

    def __init__(self, message: str, text: str, offset: int) -> None:
        self.message = message
        self.text = text
        self.offset = offset
        self.line, self.column = line_and_column(text, offset)
        super().__init__(f"line {self.line}, column {self.column}: {message}")

    def excerpt(self) -> str:
        """The offending line with a caret under the error column."""
        lines = self.text.split("\n")
        source = lines[self.line - 1] if self.line <= len(lines) else ""
        return f"{source}\n{' ' * (self.column - 1)}^"


@dataclass(frozen=True)
class ParseWarning:
    """A legal but discouraged construct (for example an extended identifier)."""

    message: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


@dataclass(frozen=True)
class Violation:
    """Something a reply or a cycle did against the protocol.

    Blocking violations make the middleware re-ask the model and, if they persist,
    reject the reply; the others are reported in the trace only.
    """

    kind: str
    message: str
    blocking: bool
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}: " if self.line is not None else ""
        return f"{self.kind}: {where}{self.message}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "message": self.message,
            "blocking": self.blocking,
        }
        if self.line is not None:
            data["line"] = self.line
            data["column"] = self.column
        return data
