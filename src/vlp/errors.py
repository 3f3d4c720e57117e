"""Stable problem codes, the Problem record and the package's exception types."""

from __future__ import annotations

from dataclasses import dataclass

#: Every problem the package can report, by stable code. docs/vlp.md lists the same table.
CODES: dict[str, str] = {
    # Reading a stream or document
    "VLP001": "line or document is not valid JSON (or not UTF-8)",
    "VLP002": "JSON value is not an object",
    "VLP003": "line longer than the configured maximum; skipped unread",
    "VLP004": "file cannot be read (missing, a directory, no permission)",
    "VLP005": "a key is given twice in one object (readers disagree on which value counts)",
    # Field shapes (the JSON Schema)
    "VLP101": "required field missing",
    "VLP102": "field has the wrong JSON type",
    "VLP103": "string field must not be empty",
    "VLP104": "protocol is not VLP/1.1",
    "VLP105": "unknown message type",
    "VLP106": "message type reserved for a later VLP version",
    "VLP107": "timestamp is not an RFC 3339 UTC date-time",
    "VLP108": "number out of range",
    "VLP109": "provenance item is neither a non-empty string nor an object with a ref",
    "VLP110": "safety level is not safe, review or block",
    "VLP111": "safety issue lacks a non-empty code",
    "VLP112": "refers_to list is empty",
    # Truth-serum rules on one message
    "VLP201": "evidence must carry refers_to",
    "VLP202": "evidence must carry at least one provenance item",
    "VLP203": "response and correction must carry refers_to",
    "VLP204": "confidence >= 0.9 needs provenance or safety.level = review",
    "VLP205": "session_context must carry session_id",
    # Checks across the messages of a thread
    "VLP301": "duplicate message id",
    "VLP302": "refers_to names an id that no valid message of the thread has",
    "VLP303": "refers_to names a message that comes later in the thread",
    "VLP304": "seq gap within a session",
    "VLP305": "seq repeated or out of order within a session",
    "VLP306": "evidence attached to a message that is not a claim",
    "VLP307": "corrections form a cycle",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a message, a line or a thread."""

    code: str
    message: str
    line: int | None = None
    id: str | None = None

    def __str__(self) -> str:
        return f"{self.code} {self.message}"


# A class with Problem's slots and nothing else (the same layout): made without `__init__`,
# its slots set by plain stores, then turned into a Problem. The explained lines of a stream
# build thousands of records: ~0.1 us each against ~0.33 us for `Problem(...)`.
_OpenProblem = type("_OpenProblem", (), {"__slots__": Problem.__slots__})


def new_problem(code: str, message: str, line: int | None, ident: str | None) -> Problem:
    """``Problem(code, message, line, ident)``, the same record (type, equality, hash,
    repr, pickling, frozenness), built at a third of the cost."""
    problem = _OpenProblem()
    problem.code = code
    problem.message = message
    problem.line = line
    problem.id = ident
    problem.__class__ = Problem
    return problem  # type: ignore[no-any-return]


class VLPError(ValueError):
    """A message could not be made or loaded because it breaks VLP/1.1."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems))


class CorrectionCycleError(VLPError):
    """Corrections refer to each other in a loop, so no version is the current one."""
