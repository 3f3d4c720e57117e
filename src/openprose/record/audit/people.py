"""The trail's rows for what a person is asked and answers: approvals of tool calls and
answers to an `ask` (a mixin of `Translator`, kept apart to keep modules short)."""

from __future__ import annotations

from typing import Any

from openprose.record import events as ev
from openprose.record.audit.messages import VM, _details
from openprose.record.codec import fields_of


class PeopleRows:
    """Approval and question rows; the query of each is remembered so its answer refers to it."""

    _approvals: dict[str, str]  # approval id -> its query
    _questions: dict[str, str]  # `ask` question id -> its query
    _tool_calls: dict[tuple[str, object, object], str]  # (step, turn, index) -> its query

    def say(
        self, kind: str, t: float, *, sender: str, content: str, confidence: float, **fields: Any
    ) -> str:
        raise NotImplementedError  # `Translator.say`

    def approval_requested(self, event: ev.ApprovalRequested, t: float) -> None:
        step, agent = event.step, event.agent
        self._approvals[str(event.id)] = self.say(
            "query",
            t,
            sender=VM,
            receiver="human",
            content=(
                f"{'agent ' + str(agent) if agent else 'a session'} wants to "
                f"{event.kind} {event.action} (tool {event.tool})"
            ),
            confidence=1.0,
            topic="approval",
            refers_to=self._tool_calls.get((step, event.turn, event.index)),
            safety={"level": "review", "requires_human": True},
            payload=_details(step, fields_of(event)),
        )

    def approval_decided(self, event: ev.ApprovalDecided, t: float) -> None:
        request = self._approvals.get(str(event.id))
        if request is None:
            return  # a decision without its request in this journal: nothing to answer
        self.say(
            "response",
            t,
            sender=f"human ({event.by or 'unknown'})",
            receiver=VM,
            content=f"{event.answer}: {event.kind} {event.action}",
            confidence=1.0,
            provenance=[f"approval:{event.id}"],
            topic="approval",
            refers_to=request,
            payload=_details(event.step, fields_of(event)),
        )

    # --- a person's answer (`ask`) ---

    def question_asked(self, event: ev.QuestionAsked, t: float) -> None:
        options = event.options or []
        offered = f" (options: {', '.join(map(str, options))})" if options else ""
        self._questions[str(event.id)] = self.say(
            "query",
            t,
            sender=VM,
            receiver="human",
            content=f"{event.question}{offered}",
            confidence=1.0,
            topic="question",
            safety={"level": "review", "requires_human": True},
            payload=_details(event.step, fields_of(event)),
        )

    def question_answered(self, event: ev.QuestionAnswered, t: float) -> None:
        """Who answered (the login name, and through what: cli, ui, api, terminal; or the
        default taken at the timeout) and when: the message's timestamp."""
        query = self._questions.get(str(event.id))
        if query is None:
            return  # an answer without its question in this journal: nothing to answer
        by = str(event.by or "unknown")
        user = event.user
        sender = VM if by == "timeout" else f"human ({user + ' via ' if user else ''}{by})"
        said = "no answer in time, the default" if by == "timeout" else "answer"
        self.say(
            "response",
            t,
            sender=sender,
            receiver=VM,
            content=f"{said}: {event.answer}",
            confidence=1.0,
            provenance=[f"question:{event.id}"],
            topic="question",
            refers_to=query,
            payload=_details(event.step, fields_of(event)),
        )
