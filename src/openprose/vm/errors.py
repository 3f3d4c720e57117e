"""Run-time errors. Every error a program can see carries the statement's `path:line:col`."""

from __future__ import annotations

from collections.abc import Iterable

from openprose.source import Span


def location(path: str, span: Span | None) -> str:
    if span is None:
        return path
    return f"{path}:{span.line}:{span.column}"


class ProseError(Exception):
    """An error the program can catch with `try`/`catch`."""

    kind = "error"

    def __init__(self, message: str, *, where: str = "", code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.code = code
        # Model calls whose failure this error carries (step -> message): when a program
        # handles the error, they are journaled as handled, and a resumed run is served the
        # same failures instead of asking again and taking another path.
        self.failed_calls: dict[str, str] = {}
        # For the person reading the run's end (how many attempts, what to change); the
        # program's `catch` sees `message` only.
        self.hint: str | None = None

    def __str__(self) -> str:
        code = f"{self.code} " if self.code else ""
        prefix = f"{self.where}: " if self.where else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{prefix}{code}{self.message}{hint}"


class ThrownError(ProseError):
    """Raised by `throw "message"` (or rethrown by a bare `throw`)."""

    kind = "throw"


class SessionFailed(ProseError):
    """A session's provider call failed for good (after its `retry:` attempts)."""

    kind = "session"


class JudgmentError(ProseError):
    """The evaluator model gave no usable structured answer, even when asked again."""

    kind = "judgment"


class ParallelFailed(ProseError):
    kind = "parallel"


class ProseRuntimeError(ProseError):
    """A fault of the program at run time: recursion too deep, unknown output, bad value."""

    kind = "runtime"


def failed_calls(errors: Iterable[ProseError]) -> dict[str, str]:
    """The failed model calls that `errors` carry, together."""
    found: dict[str, str] = {}
    for error in errors:
        found.update(error.failed_calls)
    return found


class RunAborted(Exception):
    """Not catchable by the program: configuration problems that stop the run."""
