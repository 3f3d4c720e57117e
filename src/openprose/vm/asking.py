"""Running `ask "question"`: the person's answer is the statement's value.

The question is journaled (`question_asked`) before anyone is asked, so its id and the time
it was first asked survive a pause; the answer is journaled sealed (`question_answered`),
so a resume binds it again without asking twice. With nobody to ask, the run stops
`waiting` (`questions.QuestionPending`); once the question's timeout has passed, its default
is taken — journaled as answered `by` "timeout" — or, with no default, the statement fails
(a catchable error).
"""

from __future__ import annotations

import time
from typing import Any

from openprose import nodes as n
from openprose.asking import properties_of, timeout_of
from openprose.record import events as ev
from openprose.record.approval_seal import KeyUnavailable, approval_key
from openprose.record.codec import line_of
from openprose.vm.errors import ProseRuntimeError
from openprose.vm.frame import Ctx
from openprose.vm.machine import Machine
from openprose.vm.questions import Question, reply_event, reply_problem
from openprose.vm.values import Value


async def ask(vm: Machine, node: n.Ask, ctx: Ctx, step: str) -> Value:
    question = await _question(vm, node, ctx, step)
    shared = vm.shared
    recorded = shared.replay.tools.replies.pop(question.id, None)
    if recorded is not None:
        why = reply_problem(recorded, question, shared.tools.run_id)
        if not why:
            return _bind(vm, ctx, step, question, str(recorded["answer"]), recorded)
        shared.emit(
            ev.QuestionIgnored(
                step=step,
                id=question.id,
                what=f"answer {recorded.get('answer')!r} to {question.id} ({question.text})",
                reason=why,
            )
        )
    if question.remaining(time.time()) == 0:
        return _timed_out(vm, node, ctx, step, question)
    shared.commit()  # the question is on disk before anyone sees it
    answer = await shared.tools.asker.ask(question)
    if answer is None:
        return _timed_out(vm, node, ctx, step, question)
    return _record(vm, ctx, step, question, answer, "terminal")


async def _question(vm: Machine, node: n.Ask, ctx: Ctx, step: str) -> Question:
    """The question as asked now, with the id and first-asked time of its earlier asking."""
    where = vm.expressions.where(node)
    props = properties_of(node)
    text = vm.expressions.interpolate(node.question, ctx)
    options: tuple[str, ...] = ()
    if "options" in props:
        value = await vm.eval(props["options"].value, ctx, step)
        if not isinstance(value, list) or not value:
            raise ProseRuntimeError(
                f"the options of an ask are a non-empty list, got {_shown(value)}", where=where
            )
        options = tuple(str(option) for option in value)
    default = None
    if "default" in props:
        default = str(await vm.eval(props["default"].value, ctx, step))
        if options and default not in options:
            raise ProseRuntimeError(
                f"the default {default!r} is not one of the options {list(options)}", where=where
            )
    timeout = timeout_of(props["timeout"].value) if "timeout" in props else None
    turns = vm.shared.replay.tools
    earlier = turns.questions.get(step)
    number = len({str(event.get("id")) for event in turns.questions.values()}) + 1
    question = Question(
        id=str(earlier["id"]) if earlier is not None else f"q{number}",
        step=step,
        text=text,
        options=options,
        default=default,
        timeout=timeout,
        asked_at=time.time(),
    )
    if earlier is not None and earlier.get("digest") == question.digest:
        return Question.from_event(earlier)
    # First asked (or asked again in other words): its clock starts now.
    fields = question.to_event()
    asked = ev.QuestionAsked(step=step, **fields)
    vm.shared.emit(asked)
    turns.add(asked, line_of(asked, question.asked_at))
    vm.store.state(f"{step}→ asked {question.describe()}")
    return question


def _timed_out(vm: Machine, node: n.Ask, ctx: Ctx, step: str, question: Question) -> Value:
    if question.default is None:
        vm.shared.emit(ev.QuestionExpired(step=step, id=question.id, timeout=question.timeout))
        raise ProseRuntimeError(
            f"nobody answered {question.id} ({question.text!r}) within {question.timeout:g} s, "
            "and it has no default",
            where=vm.expressions.where(node),
        )
    return _record(vm, ctx, step, question, question.default, "timeout")


def _record(vm: Machine, ctx: Ctx, step: str, question: Question, answer: str, by: str) -> Value:
    """Journal an answer given in this process (sealed: a resume binds it again)."""
    t = time.time()
    try:
        fields = reply_event(approval_key(), vm.shared.tools.run_id, question, answer, by, t)
    except KeyUnavailable:
        # unsealed: this run uses it; a resume reports it and asks again
        fields = {"id": question.id, "answer": answer, "digest": question.digest, "by": by}
    vm.shared.emit(ev.QuestionAnswered(step=step, **fields))
    return _bind(vm, ctx, step, question, answer, fields)


def _bind(
    vm: Machine, ctx: Ctx, step: str, question: Question, answer: str, event: dict[str, Any]
) -> Value:
    by = str(event.get("by") or "")
    how = (
        f"no answer within {question.timeout:g} s: took the default"
        if by == "timeout"
        else f"answered via {by}" + (f" by {event['user']}" if event.get("user") else "")
    )
    vm.store.state(f"{step}→ answer {question.id}: {answer!r} ({how})")
    ctx.history.add(f"answer to {question.text!r}", answer)
    return answer


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
