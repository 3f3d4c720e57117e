"""Judgments: the evaluator model decides conditions, choices and filters.

Each judgment is one journaled model call (asked again once when the answer does not parse);
a resumed run is served the recorded decision. The questions and their parsing are in
`judgments`; this module asks them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openprose import nodes as n
from openprose.providers.base import Message, ModelRequest
from openprose.record import events as ev
from openprose.record import steps
from openprose.record.runstore import RunStore
from openprose.vm import judgments
from openprose.vm.calls import ModelCalls
from openprose.vm.context import Contexts
from openprose.vm.errors import JudgmentError
from openprose.vm.expressions import Expressions, discretion_text
from openprose.vm.frame import Ctx
from openprose.vm.runtime import Shared
from openprose.vm.values import Value, render

_JUDGMENT_MAX_TOKENS = 200


class Judge:
    def __init__(
        self,
        shared: Shared,
        store: RunStore,
        calls: ModelCalls,
        contexts: Contexts,
        expressions: Expressions,
    ) -> None:
        self.shared = shared
        self.store = store
        self.calls = calls
        self.contexts = contexts
        self.expressions = expressions

    async def condition(self, condition: n.Discretion, ctx: Ctx, step: str) -> bool:
        text = discretion_text(condition)
        question = judgments.condition_question(text, self.contexts.for_judgment(ctx, step))
        verdict = await self.ask(
            step=step,
            kind="condition",
            question=question,
            parse=judgments.parse_verdict,
            schema=judgments.VERDICT_SCHEMA,
            node=condition,
            summary=text,
        )
        assert isinstance(verdict, judgments.Verdict)
        self.store.state(f"{step}→ **{text}** → {str(verdict.value).lower()} ({verdict.reason})")
        return verdict.value

    async def choose(
        self, stmt: n.Choice, labels: list[str], ctx: Ctx, step: str
    ) -> judgments.Selection:
        """Which option of a `choice` to take."""
        criteria = discretion_text(stmt.criteria)
        judge_step = steps.judgment(step)
        context = self.contexts.for_judgment(ctx, judge_step)
        question = judgments.choice_question(criteria, labels, context)
        chosen = await self.ask(
            step=judge_step,
            kind="choice",
            question=question,
            parse=lambda text: judgments.parse_selection(text, labels),
            schema=judgments.selection_schema(labels),
            node=stmt,
            summary=criteria,
        )
        assert isinstance(chosen, judgments.Selection)
        self.store.state(f"{step}→ choice **{criteria}** → {chosen.label!r} ({chosen.reason})")
        return chosen

    async def keep(self, answer: Value, item: Value, op: n.PipeOp, step: str) -> bool:
        """Whether `filter` keeps `item`, given the filter body's answer about it."""
        literal = judgments.literal_verdict(render(answer))
        if literal is not None:
            self.shared.emit(
                ev.Decision(step=step, kind="filter", verdict=literal, reason="literal answer")
            )
            self.store.state(f"{step}→ filter → {'keep' if literal else 'drop'} (literal answer)")
            return literal
        question = judgments.filter_question(render(answer), render(item))
        verdict = await self.ask(
            step=step,
            kind="filter",
            question=question,
            parse=judgments.parse_verdict,
            schema=judgments.VERDICT_SCHEMA,
            node=op,
            summary="filter",
        )
        assert isinstance(verdict, judgments.Verdict)
        keep = "keep" if verdict.value else "drop"
        self.store.state(f"{step}→ filter → {keep} ({verdict.reason})")
        return verdict.value

    async def ask(
        self,
        *,
        step: str,
        kind: str,
        question: str,
        parse: Callable[[str], object | None],
        schema: dict[str, Any],
        node: Any,
        summary: str,
    ) -> object:
        served = self.shared.replay.decisions.get(step)
        if served is not None:
            result = parse(str(served["answer"]))
            if result is not None:
                self.shared.stats.served += 1
                self.shared.emit(ev.DecisionServed(step=step, kind=kind))
                return result
        handled = self.shared.replay.failures.get(step)
        if handled is not None:
            # the earlier attempt's program handled this failure: the same path again
            self.shared.stats.served += 1
            self.shared.emit(ev.FailureServed(step=step, error=handled))
            raise self._failure(handled, step, node)
        messages: tuple[Message, ...] = (Message("user", question),)
        alias = self.shared.config.evaluator_model
        for attempt in (1, 2):
            request = ModelRequest(
                model=alias,
                messages=messages,
                system=judgments.SYSTEM,
                max_tokens=_JUDGMENT_MAX_TOKENS,
                temperature=0.0,
                response_schema=schema,
            )
            response = await self.calls.call(
                f"{step}~{attempt}",
                request,
                alias=alias,
                agent="evaluator",
                where=node,
                event="judgment",
            )
            result = parse(response.text)
            if result is not None:
                reason = getattr(result, "reason", "")
                verdict = getattr(result, "value", getattr(result, "label", None))
                self.shared.emit(
                    ev.Decision(
                        step=step,
                        kind=kind,
                        question=summary,
                        answer=response.text,
                        verdict=verdict,
                        reason=reason,
                        attempts=attempt,
                    )
                )
                return result
            messages = (
                *messages,
                Message("assistant", response.text),
                Message("user", judgments.reask(question)),
            )
        answer = _shown(response.text)
        self.shared.emit(ev.DecisionFailed(step=step, kind=kind, question=summary))
        raise self._failure(
            f"the evaluator ({alias}) gave no usable {kind} answer for **{summary}** "
            f"(asked twice; its last answer: {answer}); a {kind} is never guessed: choose an "
            f"evaluator that answers the JSON asked for (`--evaluator sonnet`) or reword the "
            f"{'criteria' if kind == 'choice' else 'condition'} as a yes/no question",
            step,
            node,
        )

    def _failure(self, message: str, step: str, node: Any) -> JudgmentError:
        """The judgment's error; its step travels with it, so that a program handling it
        journals the failure (`failure_handled`) and a resumed run takes the same path,
        while a run that failed on it asks again when resumed."""
        error = JudgmentError(message, where=self.expressions.where(node))
        error.failed_calls[step] = message
        return error


def _shown(text: str, limit: int = 120) -> str:
    """The evaluator's answer on one line, quoted and cut to ``limit`` characters."""
    line = " ".join(text.split())
    if not line:
        return "(empty)"
    return repr(line if len(line) <= limit else line[: limit - 1] + "…")
