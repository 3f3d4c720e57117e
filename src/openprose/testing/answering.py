"""A case's answers to the program's questions (`ask`).

A run in a case has nobody at a terminal, so an `ask` stops it `waiting`, as any unattended
run. The case then answers as a person would: through `prose answer`'s path (the answer is
checked against the options, sealed with the user's key and journaled `by: "test"`) and the
run is resumed, until it ends or asks something the case does not answer. So the program
sees a real, sealed answer, and a kept run reads in `prose show` as it would in production.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprose.terminal import one_line
from openprose.vm.questions import Question

__all__ = ["CaseAnswers", "answer_and_resume"]

BY_TEST = "test"  # the channel recorded with a case's answer
BY_TIMEOUT = "timeout"  # a default taken because nobody answered in time
MAX_RESUMES = 1000  # a program asking without end (an unbounded loop) stops the case here


@dataclass(slots=True)
class CaseAnswers:
    """The case's answers, keyed by question text or id: a text answers every asking, a
    list answers the askings in order. Remembers which keys the run used."""

    given: Mapping[str, str | tuple[str, ...]]
    taken: dict[str, int] = field(default_factory=dict)  # answers taken per key
    matched: set[str] = field(default_factory=set)  # keys naming a question asked

    def for_question(self, question: Question) -> tuple[str, str] | None:
        """`(answer, by)` for `question`, or None when the case does not answer it. The
        id is looked up first (it names one asking), then the text. Unanswered, a question
        with a default and a timeout takes its default, as the timeout would (at once)."""
        self.matched.update(k for k in (question.id, question.text) if k in self.given)
        for key in (question.id, question.text):
            given = self.given.get(key)
            if given is None:
                continue
            count = self.taken.get(key, 0)
            self.taken[key] = count + 1
            if isinstance(given, str):
                return given, BY_TEST
            if count < len(given):
                return given[count], BY_TEST
        if question.default is not None and question.timeout is not None:
            return question.default, BY_TIMEOUT
        return None

    def unused(self) -> list[str]:
        """The keys naming no question the run asked (a typo, or a question the program no
        longer asks)."""
        return [key for key in self.given if key not in self.matched]


async def answer_and_resume(
    result: Any, answers: CaseAnswers, resume: Any
) -> tuple[Any, list[str]]:
    """Answer each question the run waits on and resume it (`resume(run_dir)` returns the
    next `RunResult`), until it no longer waits on a question. The last result, and the
    problems that stopped answering (a question the case does not answer, an answer that is
    not one of its options)."""
    from openprose.session.answers import answer_question
    from openprose.vm.questions import AnswerError
    from openprose.vm.replies import pending_questions

    for _ in range(MAX_RESUMES):
        if result.status != "waiting":
            return result, []
        run_dir = Path(result.run_dir)
        pending = pending_questions(run_dir)
        if not pending:
            return result, []  # it waits on a permission: the case says `approve`
        for question in pending:
            chosen = answers.for_question(question)
            if chosen is None:
                return result, [_unanswered(question)]
            answer, by = chosen
            try:
                answer_question(run_dir, answer, question.id, by=by)
            except AnswerError as error:
                return result, [f"the case's answer to {_named(question)} is refused: {error}"]
        result = await resume(run_dir)
    return result, [f"the program asked more than {MAX_RESUMES} times; the case stops it"]


def _named(question: Question) -> str:
    return f"{question.id} {one_line(question.text)!r}"


def _unanswered(question: Question) -> str:
    offered = f" (options: {', '.join(question.options)})" if question.options else ""
    key = one_line(question.text).replace("\\", "\\\\").replace('"', '\\"')
    return (
        f"the program asked {_named(question)}{offered} and the case gives no answer: "
        f'add `answers = {{ "{key}" = "..." }}` to the case'
    )
