"""A question an `ask` statement puts to a person, who answers it, and which recorded
answers a run may trust.

A person answers at the terminal (`prose run` asks inline), or — when nobody is there — the
run stops `waiting` (exit 4) with a `question_asked` event in its journal, and `prose answer`,
the web view or `openprose.answer` append a `question_answered` event sealed with the user's
approval key (`tools.approval_seal.seal_reply`): the seal binds the answer to this run, the
question's id and exact wording, who answered, through what and when. A resume uses only
answers whose seal holds; any other line (written by an agent, copied from another run,
altered) is ignored and reported, and the question is asked again.
"""

from __future__ import annotations

import asyncio
import getpass
import select
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol

from openprose.record import approval_seal as seal
from openprose.record.approval_seal import question_digest, seal_reply
from openprose.record.approval_seal import reply_problem as answer_problem_of_reply
from openprose.terminal import one_line
from openprose.vm.tools.approvals import ApprovalPending

__all__ = [
    "TIMED_OUT",
    "AnswerError",
    "Asker",
    "NobodyAsker",
    "Question",
    "QuestionPending",
    "TerminalAsker",
    "reply_event",
    "reply_problem",
    "who_am_i",
]

CHANNELS = seal.CHANNELS  # who may have answered (`by` of a `question_answered` event)


class AnswerError(Exception):
    """An answer the question does not take (not one of its options), or nothing to answer."""


@dataclass(frozen=True, slots=True)
class Question:
    id: str  # q1, q2 ...: given when first asked, journaled, the same on every resume
    step: str
    text: str
    options: tuple[str, ...] = ()
    default: str | None = None
    timeout: float | None = None  # seconds, counted from `asked_at`
    asked_at: float = 0.0

    @property
    def digest(self) -> str:
        """SHA-256 of the wording, the options and the default: an answer holds only for
        the question it answered."""
        return question_digest(self.text, self.options, self.default)

    def describe(self) -> str:
        """The question on one line, every control character escaped."""
        offered = f" [{' | '.join(one_line(o) for o in self.options)}]" if self.options else ""
        return f"{self.id}: {one_line(self.text)}{offered}"

    def remaining(self, now: float) -> float | None:
        """Seconds left to answer (0 when the time is up); None without a timeout."""
        if self.timeout is None:
            return None
        return max(0.0, self.asked_at + self.timeout - now)

    def choose(self, given: str) -> str:
        """The answer `given` stands for: for a question with options, one of them by its
        number (1, 2 ...) or its text (case and surrounding spaces aside); else the text."""
        if not self.options:
            return given
        wanted = given.strip()
        if wanted.isdigit() and 1 <= int(wanted) <= len(self.options):
            return self.options[int(wanted) - 1]
        for option in self.options:
            if option.strip().casefold() == wanted.casefold():
                return option
        listed = ", ".join(f"{i}) {o}" for i, o in enumerate(self.options, 1))
        raise AnswerError(
            f"{one_line(given)!r} is not one of the options of {self.id}: {listed} "
            "(answer with the number or the text)"
        )

    def to_event(self) -> dict[str, Any]:
        """The fields of its `question_asked` event."""
        return {
            "id": self.id,
            "question": self.text,
            "options": list(self.options),
            "default": self.default,
            "timeout": self.timeout,
            "digest": self.digest,
        }

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> Question:
        """The question a `question_asked` event records; `ValueError`/`TypeError` when the
        event has the wrong shape."""
        options = event.get("options") or ()
        if not isinstance(options, list | tuple):
            raise TypeError("`options` must be a list")
        timeout = event.get("timeout")
        default = event.get("default")
        return cls(
            id=str(event.get("id")),
            step=str(event.get("step", "")),
            text=str(event.get("question")),
            options=tuple(str(o) for o in options),
            default=None if default is None else str(default),
            timeout=None if timeout is None else float(timeout),
            asked_at=float(event.get("t") or 0.0),
        )


class QuestionPending(ApprovalPending):
    """Nobody can answer now: the run stops as `waiting` until `prose answer` (an approval's
    kind of pause: a `try` does not run its `finally` for it, the run is resumable)."""

    def __init__(self, question: Question) -> None:
        Exception.__init__(self, question.describe())
        self.question = question


# What an asker returns when the question's time ran out unanswered.
TIMED_OUT: str | None = None


class Asker(Protocol):
    async def ask(self, question: Question) -> str | None: ...


@dataclass(slots=True)
class NobodyAsker:
    async def ask(self, question: Question) -> str | None:
        raise QuestionPending(question)


class TerminalAsker:
    """Asks on the terminal, one question at a time; within the question's time left when it
    has a timeout (then `TIMED_OUT`). End of input means nobody is there: the run waits.
    `hold` pauses whatever else draws on the terminal (the live progress table) meanwhile."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self.hold: Callable[[], AbstractContextManager[object]] = nullcontext

    async def ask(self, question: Question) -> str | None:
        async with self._lock:
            with self.hold():
                return await asyncio.to_thread(self._ask_blocking, question)

    @staticmethod
    def _ask_blocking(question: Question) -> str | None:
        lines = [f"\nprose: question {question.id}: {one_line(question.text)}"]
        for number, option in enumerate(question.options, 1):
            mark = "  (default)" if option == question.default else ""
            lines.append(f"  [{number}] {one_line(option)}{mark}")
        hints = []
        if question.default is not None:
            hints.append(f"Enter for {one_line(question.default)!r}")
        remaining = question.remaining(time.time())
        if remaining is not None:
            hints.append(f"{round(remaining)} s to answer")
        prompt = "\n".join(lines) + ("\n  (" + "; ".join(hints) + ")" if hints else "") + "\n  > "
        while True:
            sys.stderr.write(prompt)
            sys.stderr.flush()
            remaining = question.remaining(time.time())
            if remaining is not None:
                ready, _, _ = select.select([sys.stdin], [], [], remaining)
                if not ready:
                    took = "" if question.default is None else f": took {question.default!r}"
                    sys.stderr.write(f"\nprose: no answer to {question.id} in time{took}\n")
                    return TIMED_OUT
            line = sys.stdin.readline()
            if not line:  # end of input: nobody is there
                raise QuestionPending(question)
            given = line.strip()
            if not given:
                if question.default is not None:
                    return question.default
                continue
            try:
                return question.choose(given)
            except AnswerError as error:
                sys.stderr.write(f"prose: {error}\n")


def who_am_i() -> str:
    """The login name recorded with an answer ("" when the system cannot say)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def reply_event(
    key: bytes, run_id: str, question: Question, answer: str, by: str, t: float
) -> dict[str, Any]:
    """A sealed `question_answered` event (without `ev`, `step` and `t`, which the journal
    or `answering` add: `t` is given so that the seal covers it)."""
    user = who_am_i()
    return {
        "id": question.id,
        "answer": answer,
        "digest": question.digest,
        "by": by,
        "user": user,
        "answered": t,
        "seal": seal_reply(key, run_id, question.id, question.digest, answer, by, user, t),
    }


def reply_problem(event: Mapping[str, Any], question: Question, run_id: str) -> str:
    """Why a journaled answer must not be used for `question`, or "" when it may."""
    return answer_problem_of_reply(event, question.id, question.digest, run_id)
