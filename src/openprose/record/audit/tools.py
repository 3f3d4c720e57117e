"""The trail's rows for a tool loop's calls, permission checks and results (a mixin of
`Translator`, kept apart to keep modules short; approvals are in `people`)."""

from __future__ import annotations

from typing import Any

import orjson

from openprose.record import events as ev
from openprose.record.audit.messages import VM, _details
from openprose.record.codec import fields_of
from openprose.record.steps import turn_step


class ToolRows:
    """Tool call, permission and result rows: each call's query is remembered by (step,
    turn, index) until its result answers it."""

    _tool_calls: dict[tuple[str, object, object], str]  # (step, turn, index) -> its query
    _results: dict[tuple[str, str], str]  # (session step, call id) -> its result

    def say(
        self, kind: str, t: float, *, sender: str, content: str, confidence: float, **fields: Any
    ) -> str:
        raise NotImplementedError  # `Translator.say`

    def _actor(self, step: str) -> str:
        raise NotImplementedError  # `Translator._actor`

    def _answer_id(self, step: str) -> str | None:
        raise NotImplementedError  # `Translator._answer_id`

    def tool_call(self, event: ev.ToolCalled, t: float) -> None:
        step, call = event.step, event.call or {}
        name = str(call.get("name") or "tool")
        arguments = call.get("arguments")
        shown = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
        turn = event.turn
        asked_by = self._answer_id(turn_step(step, turn)) if isinstance(turn, int) else None
        self._tool_calls[(step, turn, event.index)] = self.say(
            "query",
            t,
            sender=self._actor(step),
            receiver=f"tool:{name}",
            content=f"{name}({shown})",
            confidence=1.0,
            topic="tool_call",
            refers_to=asked_by or self._answer_id(step),  # the turn's answer that asked
            payload={"step": step, "tool": name, "call_id": call.get("id"), "arguments": arguments},
        )

    def permission(self, event: ev.PermissionDecided, t: float) -> None:
        step, decision, reason = event.step, event.decision, event.reason
        what = " ".join(str(x) for x in (event.kind, event.action) if x)
        asked = decision == "asked"
        self.say(
            "notice",
            t,
            sender=VM,
            content=f"permission {decision}: {event.tool} {what} ({reason})",
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic="permission",
            refers_to=self._tool_calls.get((step, event.turn, event.index)),
            safety={"level": "review", "requires_human": True} if asked else None,
            payload=_details(step, fields_of(event)),
        )

    def tool_result(self, event: ev.ToolResulted, t: float) -> None:
        step, tool = event.step, str(event.tool or "tool")
        call = self._tool_calls.pop((step, event.turn, event.index), None)
        if call is None:
            return  # its call was not journaled (cannot happen in one run): nothing to answer
        self._results[(step, str(event.call_id))] = self.say(
            "response",
            t,
            sender=f"tool:{tool}",
            receiver=self._actor(step),
            content=str(event.content),
            confidence=1.0,
            provenance=[f"tool:{tool}", f"step:{step}"],
            topic="tool_result",
            refers_to=call,
            payload={
                "step": step,
                "call_id": event.call_id,
                "is_error": bool(event.is_error),
                "omitted_bytes": event.omitted_bytes,
            },
        )
