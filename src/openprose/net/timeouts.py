"""How long each part of an exchange may take, and the failure that says which ran out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["TimedOut", "Timeouts"]


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds, or None for no limit.

    `connect`: waiting for a free connection and opening one (lookup, TCP, TLS, proxy).
    `first_byte`: from the request sent until the answer's head has arrived (a server may
    think a long time before it answers: for a model, the whole generation when unstreamed).
    `read`: any silence once the answer has begun.
    `total`: the whole exchange of an unstreamed request, connecting included (a streamed
    answer may run as long as it keeps talking)."""

    connect: float | None = None
    first_byte: float | None = None
    read: float | None = None
    total: float | None = None

    @classmethod
    def overall(cls, seconds: float, *, read: float | None = None) -> Timeouts:
        """Everything within `seconds`; silences once the answer began within `read`."""
        return cls(connect=seconds, first_byte=seconds, read=read, total=seconds)


class TimedOut(TimeoutError):
    """One of the `Timeouts` ran out: `which` names it ("connect", "first_byte", "read" or
    "total") and `seconds` its length."""

    WORDS: ClassVar[dict[str, str]] = {
        "connect": "no connection within the {s:g} s connect timeout",
        "first_byte": "no answer began within the {s:g} s first-byte timeout",
        "read": "the answer stalled: nothing arrived for {s:g} s (read timeout)",
        "total": "no answer within the {s:g} s request timeout",
    }

    def __init__(self, which: str, seconds: float) -> None:
        super().__init__(self.WORDS[which].format(s=seconds))
        self.which = which
        self.seconds = seconds
