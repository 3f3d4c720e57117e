"""The trail's rows for what a person is asked and answers: approvals of tool calls and
answers to an `ask` (a mixin of `Translator`, kept apart to keep modules short)."""

from __future__ import annotations

from typing import Any

from openprose.record.audit.messages import VM, Fields, _details


class PeopleRows:
    """Approval and question rows; the query of each is remembered so its answer refers to it."""

    _approvals: dict[str, str]  # approval id -> its query
    _questions: dict[str, str]  # `ask` question id -> its query
    _tool_calls: dict[tuple[str, object, object], str]  # (step, turn, index) -> its query

    def say(
        self, kind: str, t: float, *, sender: str, content: str, confidence: float, **fields: Any
    ) -> str:
        raise NotImplementedError  # `Translator.say`

    def approval_requested(self, step: str, t: float, event: Fields) -> None:
        agent = event.get("agent")
        self._approvals[str(event.get("id"))] = self.say(
            "query",
            t,
            sender=VM,
            receiver="human",
            content=(
                f"{'agent ' + str(agent) if agent else 'a session'} wants to "
                f"{event.get('kind')} {event.get('action')} (tool {event.get('tool')})"
            ),
            confidence=1.0,
            topic="approval",
            refers_to=self._tool_calls.get((step, event.get("turn"), event.get("index"))),
            safety={"level": "review", "requires_human": True},
            payload=_details(step, event),
        )

    def approval_decided(self, step: str, t: float, event: Fields) -> None:
        request = self._approvals.get(str(event.get("id")))
        if request is None:
            return  # a decision without its request in this journal: nothing to answer
        self.say(
            "response",
            t,
            sender=f"human ({event.get('by') or 'unknown'})",
            receiver=VM,
            content=f"{event.get('answer')}: {event.get('kind')} {event.get('action')}",
            confidence=1.0,
            provenance=[f"approval:{event.get('id')}"],
            topic="approval",
            refers_to=request,
            payload=_details(step, event),
        )

    # --- a person's answer (`ask`) ---

    def question_asked(self, step: str, t: float, event: Fields) -> None:
        options = event.get("options") or []
        offered = f" (options: {', '.join(map(str, options))})" if options else ""
        self._questions[str(event.get("id"))] = self.say(
            "query",
            t,
            sender=VM,
            receiver="human",
            content=f"{event.get('question')}{offered}",
            confidence=1.0,
            topic="question",
            safety={"level": "review", "requires_human": True},
            payload=_details(step, event),
        )

    def question_answered(self, step: str, t: float, event: Fields) -> None:
        """Who answered (the login name, and through what: cli, ui, api, terminal; or the
        default taken at the timeout) and when: the message's timestamp."""
        query = self._questions.get(str(event.get("id")))
        if query is None:
            return  # an answer without its question in this journal: nothing to answer
        by = str(event.get("by") or "unknown")
        user = event.get("user")
        sender = VM if by == "timeout" else f"human ({user + ' via ' if user else ''}{by})"
        said = "no answer in time, the default" if by == "timeout" else "answer"
        self.say(
            "response",
            t,
            sender=sender,
            receiver=VM,
            content=f"{said}: {event.get('answer')}",
            confidence=1.0,
            provenance=[f"question:{event.get('id')}"],
            topic="question",
            refers_to=query,
            payload=_details(step, event),
        )
