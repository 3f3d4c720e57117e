"""Answering a waiting run's questions (`ask`): `prose answer`, the web view's form and
`openprose.answer` all append the answer here, sealed, for `prose resume` to bind."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openprose.record.approval_seal import KeyUnavailable, approval_key
from openprose.record.codec import encode
from openprose.record.events import QuestionAnswered
from openprose.record.journal import JOURNAL_FILE, read_journal
from openprose.record.runstore import DamagedRun
from openprose.vm.approvals import run_id_of
from openprose.vm.questions import AnswerError, Question, reply_event, reply_problem
from openprose.vm.runtime import ToolTurns

__all__ = ["Recorded", "answer_pending", "pending_questions", "recorded_answers"]


@dataclass(frozen=True, slots=True)
class Recorded:
    """A run's question and the answer its journal holds (None: none yet), with why that
    answer must not be used ("" when it may)."""

    question: Question
    reply: dict[str, Any] | None
    problem: str


def recorded_answers(run_dir: Path) -> list[Recorded]:
    """Every question of a run, oldest first, with its latest answer and whether it holds.
    `DamagedRun` when the journal cannot be read or holds a question of the wrong shape."""
    journal = run_dir / JOURNAL_FILE
    try:
        turns = ToolTurns.of(read_journal(journal))
    except OSError as error:
        raise DamagedRun(f"{journal}: cannot read ({error.strerror or error})") from None
    except (KeyError, TypeError, ValueError, OverflowError) as error:
        raise DamagedRun(f"{journal}: an event is damaged ({error})") from None
    run_id = run_id_of(run_dir)
    found = []
    for event in sorted(turns.questions.values(), key=lambda e: float(e.get("t") or 0)):
        question = Question.from_event(event)
        reply = turns.replies.get(question.id)
        problem = "" if reply is None else reply_problem(reply, question, run_id)
        found.append(Recorded(question, reply, problem))
    return found


def pending_questions(run_dir: Path) -> list[Question]:
    """The questions of a run that no answer whose seal holds answers yet, oldest first."""
    return [r.question for r in recorded_answers(run_dir) if r.reply is None or r.problem]


def answer_pending(
    run_dir: Path, text: str, question_id: str | None = None, *, by: str = "cli"
) -> dict[str, Any]:
    """Record `text` as the answer to the pending question `question_id` (or to the only
    one), given through `by` (`cli`, `ui`, `api`); an option may be chosen by its number.
    Returns the question with the answer taken. `AnswerError` when there is nothing to
    answer, the id names no pending question, or the answer is not one of its options."""
    pending = {q.id: q for q in pending_questions(run_dir)}
    if not pending:
        raise AnswerError(f"run {run_dir.name} has no question waiting for an answer")
    if question_id is None and len(pending) > 1:
        listed = "\n".join(f"  {q.describe()}" for q in pending.values())
        raise AnswerError(
            f"run {run_dir.name} has {len(pending)} questions waiting; name one:\n{listed}"
        )
    if question_id is None:
        (question,) = pending.values()
    elif question_id in pending:
        question = pending[question_id]
    else:
        raise AnswerError(f"no question {question_id} is waiting; waiting: {', '.join(pending)}")
    answer = question.choose(text)
    try:
        key = approval_key()
    except KeyUnavailable as error:
        raise AnswerError(str(error)) from None
    t = round(time.time(), 6)
    reply = reply_event(key, run_id_of(run_dir), question, answer, by, t)
    line = encode(QuestionAnswered(step=question.step, **reply), t)
    fd = os.open(run_dir / JOURNAL_FILE, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    with (run_dir / "state.md").open("a", encoding="utf-8") as state:
        state.write(f"{question.step}→ answer {question.id}: {answer!r} (via {by})\n")
    return {**question.to_event(), "answer": answer, "by": by, "user": reply["user"]}
