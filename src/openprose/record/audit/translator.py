"""Journal events in, VLP messages out: the `Translator` and `ROWS`, the one table of
event type -> message kinds (see the package's docstring)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from openprose.record import events as ev
from openprose.record.audit.messages import (
    _CUTS,
    _EMPTY,
    _FINISHED,
    _HOLE,
    _HOLE_BYTES,
    _LINE,
    _META,
    _REQUEST,
    _RESPONSE,
    _TEMPLATES,
    _UNMADE,
    EVALUATOR,
    UNSTATED,
    VM,
    Event,
    Fields,
    Message,
    _agent_name,
    _answer,
    _answer_payload,
    _details,
    _dumps,
    _query,
    _query_payload,
    _stamp,
    _timestamp,
    encode,
    shown_values,
)
from openprose.record.audit.people import PeopleRows
from openprose.record.codec import fields_of, kind_of
from openprose.record.events import Event as JournalEvent
from openprose.record.journal import JOURNAL_FILE
from openprose.record.steps import turn_step
from vlp import PROTOCOL

_TURN = re.compile(r"~t(\d+)$")  # a tool loop's later turn (`steps.turn_step`)


@dataclass(frozen=True, slots=True)
class Row:
    kinds: tuple[str, ...]  # the VLP message types the event becomes, in order
    translate: Callable[[Translator, str, float, Fields], None]  # (step, t, fields)


class Translator(PeopleRows):
    """Journal events in, VLP messages out, as NDJSON lines (`out` holds them until
    taken)."""

    def __init__(self, run_id: str, program: str) -> None:
        self.run_id = run_id
        self.program = program
        self.seq = 0
        # The lines made and not yet taken (a session's two lines are one item).
        self.out: list[bytes] = []
        self._ids = f"{run_id}/"
        self._started: dict[str, Fields] = {}  # step -> its session_started
        self._sent: dict[str, float] = {}  # call step -> the time of its session_started
        self._last: dict[str, str] = {}  # step -> id of its latest answer or failure
        self._answers: dict[str, int] = {}  # call step -> seq of the answer it got
        self._tool_calls: dict[tuple[str, object, object], str] = {}  # (step, turn, index)
        self._approvals: dict[str, str] = {}  # approval id -> its query
        self._questions: dict[str, str] = {}  # `ask` question id -> its query
        self._agents: dict[str, Fields] = {}  # session step -> its start (tools' caller)
        self._results: dict[tuple[str, str], str] = {}  # (session step, call id) -> result
        self._bound: dict[str, int] = {}  # binding name -> seq of the answer it holds now
        self._contexts: set[str] = set()  # call steps whose request named a `context:`
        # call step -> its provider-level retries (`request_retried`), written after its query
        self._retried: dict[str, list[tuple[float, Fields]]] = {}
        # A session statement's constants -> its two lines with fields for the rest.
        self._templates: dict[tuple[Any, ...], tuple[bytes, ...] | None] = {}

    # --- the doors ------------------------------------------------------------------------

    def feed(self, event: Event) -> None:
        """One journal event as read back (`ev`, `step`, `t` and its fields)."""
        row = ROWS.get(kind_of(event))  # type: ignore[arg-type]
        if row is not None:
            row.translate(self, event.get("step") or "", event.get("t", 0.0), event)

    def add(self, event: JournalEvent, t: float) -> None:
        """One event as `Runtime.emit` has it."""
        row = ROWS.get(type(event))
        if row is not None:
            row.translate(self, event.step, t, fields_of(event))

    def take_bytes(self) -> bytes:
        """The lines made so far."""
        return b"".join(self.take_chunks())

    def take_chunks(self) -> list[bytes]:
        """The lines made so far, as made (one item may hold several lines)."""
        out, self.out = self.out, []
        return out

    def take_lines(self) -> list[bytes]:
        return self.take_bytes().splitlines(keepends=True)

    def take(self) -> list[Message]:
        return [orjson.loads(line) for line in self.take_lines()]

    def say(
        self,
        kind: str,
        t: float,
        *,
        sender: str,
        content: str,
        confidence: float,
        **fields: Any,
    ) -> str:
        """One message, numbered, stamped and checked; returns its id."""
        self.seq += 1
        ident = f"{self._ids}{self.seq}"
        message: Message = {
            "id": ident,
            "protocol": PROTOCOL,
            "type": kind,
            "timestamp": _timestamp(t),
            "session_id": self.run_id,
            "seq": self.seq,
            "sender": sender,
            "content": content,
            "confidence": confidence,
        }
        for key, value in fields.items():
            if value is not None:
                message[key] = value
        self.out.append(encode(message))
        return ident

    # --- rows ----------------------------------------------------------------------------

    def run_started(self, step: str, t: float, event: Fields) -> None:
        resumed = bool(event.get("resumed"))
        what = "resumed" if resumed else "started"
        self.say(
            "session_context",
            t,
            sender=VM,
            content=f"run {self.run_id} of {self.program} {what}",
            confidence=1.0,
            provenance=[JOURNAL_FILE, "run.json"],
            payload={
                "program": self.program,
                "resumed": resumed,
                "inputs": shown_values(event.get("inputs")),
            },
        )
        if resumed:
            self._lost(t)

    def _lost(self, t: float) -> None:
        """The calls the earlier attempt sent and never heard back from (killed while they
        were out): each is said once, "sent, answer lost", when the resumed run starts."""
        for step, started in list(self._started.items()):
            sent = _timestamp(self._sent.get(step, t))
            retried = [self._retry_notice(step, *r, None) for r in self._retried.pop(step, ())]
            previous = [*([self._last[step]] if step in self._last else []), *retried]
            # The resumed run's query of this step answers the loss.
            self._last[step] = self.say(
                "notice",
                t,
                sender=VM,
                content=(
                    f"step {step}: request sent at {sent}, answer "
                    f"lost (the run stopped before it came); the resumed run asks again"
                ),
                confidence=1.0,
                provenance=[f"model:{started.get('model')}", f"step:{step}"],
                topic="answer_lost",
                refers_to=previous or None,
                payload={
                    "step": step,
                    "kind": started.get("kind") or "session",
                    "model": started.get("model"),
                    "agent": started.get("agent"),
                    "binding": started.get("binding"),
                    "sent": sent,
                },
            )
        self._started.clear()
        self._sent.clear()
        self._contexts.clear()

    def agents(self, step: str, t: float, event: Fields) -> None:
        agents = event.get("agents") or {}
        rules = [
            f"{name}: {kind} {rule}"
            for name, spec in agents.items()
            for kind, rule in (spec.get("permissions") or {}).items()
        ]
        self.say(
            "notice",
            t,
            sender=VM,
            content="agents of " + (step or "the program") + ": " + ", ".join(agents),
            confidence=1.0,
            provenance=[f"step:{step or 'program'}"],
            constraints=rules or None,
            payload={"agents": agents},
        )

    def session_started(self, step: str, t: float, event: Fields) -> None:
        self._started[step] = event
        self._sent[step] = t  # for a call a kill leaves unanswered (`_lost`)
        if event.get("context"):
            self._contexts.add(step)
        if "~" not in step:  # a session's own step (not a judgment's or a tool turn's call)
            self._agents[step] = event  # its agent's name is made if a tool is called

    def _asked(
        self,
        step: str,
        event: Fields,
        request: Any,
        attempt: int,
        t: float,
        kind: Any,
        alias: Any,
        agent: Any,
    ) -> str:
        """The query of one attempt (valid by construction: see the module's docstring);
        `kind`, `alias` and `agent` are the event's own (the session's start fills gaps)."""
        if not (kind and alias and agent):
            started = self._started.get(step, _EMPTY)
            kind = kind or started.get("kind") or "session"
            alias = alias or started.get("model")
            agent = agent or started.get("agent")
        messages = request.get("messages") if request else None
        prompt = str(messages[-1].get("content", "")) if messages else ""
        # A retry answers the failure before it.
        previous: str | list[str] | None = self._last.get(step) if self._last else None
        if previous is None and kind == "judgment" and step.endswith("~2"):
            previous = self._answer_id(step[:-1] + "1")  # asked again: the first did not parse
        payload = _query_payload(
            step, kind, alias, attempt, request.get("system") if request else None
        )
        if not request and isinstance(event.get("request_delta"), dict):
            prompt, refers_to = self._turn(step, event["request_delta"], payload)
            if previous is None:
                previous = refers_to
        if self._contexts and step in self._contexts:
            previous = self._with_context(step, previous, payload)
        self.seq = seq = self.seq + 1
        ident = f"{self._ids}{seq}"
        message = _query(
            ident,
            _timestamp(t),
            self.run_id,
            seq,
            prompt or f"({kind} request of step {step})",
            _agent_name(agent, alias),
            str(kind),
            previous,
            payload,
        )
        self.out.append(orjson.dumps(message, option=_LINE))
        return ident

    def _with_context(
        self, step: str, previous: str | list[str] | None, payload: dict[str, Any]
    ) -> str | list[str] | None:
        """`previous` and the answers the request's `context:` names hold now (the query
        refers to them; `payload.context` lists the names, those no answer holds included)."""
        names = self._started.get(step, _EMPTY).get("context") or ()
        payload["context"] = list(names)
        refs = [] if previous is None else [previous] if isinstance(previous, str) else previous
        for name in names:
            seq = self._bound.get(str(name))
            if seq is not None and f"{self._ids}{seq}" not in refs:
                refs = [*refs, f"{self._ids}{seq}"]
        if not refs:
            return None
        return refs[0] if len(refs) == 1 else refs

    def _turn(
        self, step: str, delta: dict[str, Any], payload: dict[str, Any]
    ) -> tuple[str, str | list[str] | None]:
        """A tool loop's later turn, journaled as the messages added to the turn before it
        (`request_delta`): its query says which turn it continues (`payload.continues`, whose
        query carries the system prompt, the same by construction) and refers to the tool
        results it sends back. Returns (content, refers_to)."""
        base = str(delta.get("base") or "")
        payload["continues"] = base
        session = step.rpartition("~t")[0] or step
        sent = [
            str(result.get("call_id"))
            for message in delta.get("messages") or ()
            if isinstance(message, dict)
            for result in message.get("tool_results") or ()
            if isinstance(result, dict)
        ]
        results = [r for r in (self._results.get((session, c)) for c in sent) if r]
        content = (
            f"(turn of step {session}: the conversation of step {base} continued with "
            f"{len(sent)} tool result(s))"
        )
        return content, results or self._answer_id(base)

    def session_finished(self, step: str, t: float, event: Fields) -> None:
        """The query and its answer (valid by construction: see the module's docstring).
        A first answer to a plain request (the common case: no retry before it, no
        correction, no tool turn) is written from its statement's template (`_template`):
        only the session's own values are encoded; `_exchange` makes every other."""
        try:
            request, response, elapsed, kind, alias, agent, attempt, binding = _FINISHED(event)
            messages, system, asked_model = _REQUEST(request)
            text, usage, finish_reason, answered_model = _RESPONSE(response)
            prompt = messages[-1]["content"]
        except (KeyError, TypeError, IndexError, AttributeError):  # not as the VM records it
            prompt = None
        if (
            not prompt
            or prompt.__class__ is not str
            or text.__class__ is not str
            or ("~" in step and step.endswith("~2"))
            or (self._last and step in self._last)
            or (self._contexts and step in self._contexts)
            or (self._retried and step in self._retried)
            or (binding is not None and binding.__class__ is not str)
        ):
            self._exchange(step, t, event)
            return
        if kind and alias and agent:
            asked_kind, asked_alias, asked_agent = kind, alias, agent
        else:  # the session's start fills the gaps (as `_asked` does)
            started = self._started.get(step, _EMPTY)
            asked_kind = kind or started.get("kind") or "session"
            asked_alias = alias or started.get("model")
            asked_agent = agent or started.get("agent")
        model = answered_model or asked_model or alias
        key = (asked_kind, asked_alias, asked_agent, system, kind, alias, agent, model, attempt)
        try:
            template = self._templates.get(key, _UNMADE)
        except TypeError:  # an unhashable value (a journal edited by hand)
            template = None
        if template is _UNMADE:
            template = self._template(key)
        if template is None:
            self._exchange(step, t, event)
            return
        q0, q1, q2, q3, q4, q5, a0, a1, a2, a3, a4, a5, a6, a7, a8 = template
        step_json = _dumps(step)
        seq = self.seq + 1
        answer = seq + 1
        query_seq, answer_seq = b"%d" % seq, b"%d" % answer
        # The three follow each other in the answer's payload: one object without its braces.
        outcome = _dumps({"usage": usage, "finish_reason": finish_reason, "elapsed": elapsed})
        self.out.append(
            b"".join(
                (
                    q0,
                    query_seq,
                    q1,
                    _stamp(t - (elapsed or 0.0)),
                    q2,
                    query_seq,
                    q3,
                    _dumps(prompt),
                    q4,
                    step_json,
                    q5,
                    answer_seq,
                    a0,
                    _stamp(t),
                    a1,
                    answer_seq,
                    a2,
                    _dumps(text),
                    a3,
                    step_json[1:-1],
                    a4,
                    query_seq,
                    a5,
                    step_json,
                    a6,
                    _dumps(binding),
                    a7,
                    outcome[1:-1],
                    a8,
                )
            )
        )
        self.seq = answer
        self._answered(step, answer, response)
        if binding is not None:
            self._bound[binding] = answer
        self._started.pop(step, None)
        self._sent.pop(step, None)

    def _exchange(self, step: str, t: float, event: Fields) -> None:
        """`session_finished` built message by message."""
        request, response = event.get("request") or _EMPTY, event.get("response") or _EMPTY
        elapsed, kind = event.get("elapsed"), event.get("kind")
        alias, agent = event.get("model"), event.get("agent")
        attempt = int(event.get("attempt") or 1)
        model = response.get("model") or request.get("model") or alias
        query = self._asked(step, event, request, attempt, t - (elapsed or 0.0), kind, alias, agent)
        self._retries_of(step, query)
        first = self._answer_id(step[:-1] + "1") if step.endswith("~2") else None
        binding = event.get("binding")
        payload = _answer_payload(
            step,
            binding,
            kind or "session",
            model,
            response.get("usage"),
            response.get("finish_reason"),
            elapsed,
        )
        if first is not None:
            payload["answers"] = query  # a correction refers to what it replaces only
        self.seq = seq = self.seq + 1
        message = _answer(
            f"{self._ids}{seq}",
            "response" if first is None else "correction",
            _timestamp(t),
            self.run_id,
            seq,
            _agent_name(agent, alias),
            str(response.get("text", "")),
            model,
            step,
            first or query,
            payload,
        )
        self.out.append(orjson.dumps(message, option=_LINE))
        self._answered(step, seq, response)
        if isinstance(binding, str):
            self._bound[binding] = seq
        if self._last:
            self._last.pop(step, None)
        self._started.pop(step, None)
        self._sent.pop(step, None)
        self._contexts.discard(step)

    def _answered(self, step: str, seq: int, response: Any) -> None:
        """Keep the answer's seq while something may still refer to it: a tool call of its
        turn, the tool loop's next turn, a judgment's second attempt or its decision. An
        answer without tool calls ends its session's tool loop, so the session's actor and
        its turns' answers are let go: a pmap over 100,000 items kept ~400 bytes per
        session here until the run ended."""
        turn = _TURN.search(step) if "~" in step else None
        if (turn is None and "~" in step) or (
            response.__class__ is dict and response.get("tool_calls")
        ):
            self._answers[step] = seq  # a judgment's or re-ask's call, or a turn asking for tools
            return
        session = step if turn is None else step[: turn.start()]
        self._agents.pop(session, None)
        if turn is not None:
            self._answers.pop(session, None)
            for earlier in range(1, int(step[turn.start() + 2 :])):
                self._answers.pop(f"{session}~t{earlier}", None)

    def _actor(self, step: str) -> str:
        """Who acts in session `step` (the caller of its tools)."""
        started = self._agents.get(step)
        return (
            "model" if started is None else _agent_name(started.get("agent"), started.get("model"))
        )

    def _answer_id(self, step: str) -> str | None:
        """The id of the answer call `step` got, if it got one."""
        seq = self._answers.get(step)
        return None if seq is None else f"{self._ids}{seq}"

    def _template(self, key: tuple[Any, ...]) -> tuple[bytes, ...] | None:
        """The two lines of a session whose statement constants are `key` (its attempt
        too: nearly always the first), in parts between which its own values go (in the
        order `session_finished` gives them). They are made by the builders the other
        sessions use, with stand-ins for those values: a template cannot differ from what
        they make. None (and the builders for every such session) when a constant is not
        text (the attempt not a number) or holds a stand-in's character."""
        *texts, attempt = key
        if (
            len(self._templates) >= _TEMPLATES
            or not all(value is None or value.__class__ is str for value in texts)
            or not (attempt is None or attempt.__class__ is int)
        ):
            return None
        asked_kind, asked_alias, asked_agent, system, kind, alias, agent, model = texts
        ids, run_id = self._ids, self.run_id
        hole = _HOLE
        query = _query(
            ids + hole + "a",
            hole + "b",
            run_id,
            hole + "c",  # type: ignore[arg-type]
            hole + "d",
            _agent_name(asked_agent, asked_alias),
            str(asked_kind),
            None,
            _query_payload(hole + "e", asked_kind, asked_alias, int(attempt or 1), system),
        )
        answer = _answer(
            ids + hole + "g",
            "response",
            hole + "h",
            run_id,
            hole + "i",  # type: ignore[arg-type]
            _agent_name(agent, alias),
            hole + "j",
            model,
            hole + "k",
            ids + hole + "l",
            _answer_payload(
                hole + "m", hole + "q", kind or "session", model, hole + "n", hole + "o", hole + "p"
            ),
        )
        lines = orjson.dumps(query, option=_LINE) + orjson.dumps(answer, option=_LINE)
        parts = []
        at = 0
        for stand_in in _CUTS:
            found = lines.find(stand_in, at)
            if found < 0:
                break
            parts.append(lines[at:found])
            at = found + len(stand_in)
        else:
            parts.append(lines[at:])
            if not any(_HOLE_BYTES in part for part in parts):  # a constant holds none
                template = self._templates[key] = tuple(parts)
                return template
        self._templates[key] = None
        return None

    def session_failed(self, step: str, t: float, event: Fields) -> None:
        started = self._started.get(step, _EMPTY)
        attempt = int(event.get("attempt") or 1)
        kind, alias, agent = event.get("kind"), event.get("model"), event.get("agent")
        elapsed = event.get("elapsed")
        sent = t - elapsed if isinstance(elapsed, int | float) else t  # stamped when sent
        query = self._asked(step, event, event.get("request"), attempt, sent, kind, alias, agent)
        self._retries_of(step, query)
        if not event.get("retried"):  # the call's last attempt: nothing more is out
            self._started.pop(step, None)
            self._sent.pop(step, None)
            self._contexts.discard(step)
        self._last[step] = self.say(
            "notice",
            t,
            sender=VM,
            content=f"attempt {attempt} of step {step} failed: {event.get('error')}",
            confidence=1.0,
            provenance=[f"model:{started.get('model')}", f"step:{step}"],
            refers_to=query,
            payload={
                "step": step,
                "attempt": attempt,
                "error": event.get("error"),
                "status": event.get("status"),
                "elapsed": elapsed,
                "retried": event.get("retried"),
            },
        )

    def request_retried(self, step: str, t: float, event: Fields) -> None:
        """A request the provider retried by itself (a transient failure: 429, 5xx, a lost
        connection): said after the query of its call, which is written when the call ends."""
        self._retried.setdefault(step, []).append((t, event))

    def _retries_of(self, step: str, query: str) -> None:
        """The provider-level retries of `step`'s attempt, after its query."""
        if self._retried:
            for t, event in self._retried.pop(step, ()):
                self._retry_notice(step, t, event, query)

    def _retry_notice(self, step: str, t: float, event: Fields, query: str | None) -> str:
        status = event.get("status")
        http = f"HTTP {status}" if status is not None else "no HTTP answer"
        return self.say(
            "notice",
            t,
            sender=VM,
            content=(
                f"request {event.get('request')} of attempt {event.get('attempt')} of step "
                f"{step} failed ({http}: {event.get('error')}) after {event.get('elapsed')} s; "
                f"sent again in {event.get('delay')} s"
            ),
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic="request_retried",
            refers_to=query,
            payload=_details(step, event),
        )

    def session_cancelled(self, step: str, t: float, event: Fields) -> None:
        self._started.pop(step, None)
        self._sent.pop(step, None)
        self._contexts.discard(step)
        for retried in self._retried.pop(step, ()):
            self._retry_notice(step, *retried, None)
        self.say(
            "notice",
            t,
            sender=VM,
            content=f"step {step} cancelled before its answer came (a race was decided)",
            confidence=1.0,
            provenance=[f"step:{step}"],
            payload={"step": step, "attempt": event.get("attempt")},
        )

    def decision(self, step: str, t: float, event: Fields) -> None:
        attempts = event.get("attempts")
        answer = self._answer_id(f"{step}~{attempts}") if attempts else None
        kind, question = event.get("kind"), event.get("question")
        verdict, reason = event.get("verdict"), event.get("reason")
        shown = "true" if verdict is True else "false" if verdict is False else verdict
        subject = f" **{question}**" if question else ""
        self.say(
            "claim",
            t,
            sender=EVALUATOR if answer else VM,
            receiver=VM if answer else None,
            content=f"{kind}{subject} -> {shown}: {reason}",
            confidence=UNSTATED if answer else 1.0,
            provenance=[f"step:{step}"],
            refers_to=answer,
            payload={"step": step, "kind": kind, "verdict": verdict, "reason": reason},
        )

    def decision_failed(self, step: str, t: float, event: Fields) -> None:
        self.say(
            "notice",
            t,
            sender=VM,
            content=(
                f"the evaluator gave no usable {event.get('kind')} answer for "
                f"**{event.get('question')}** (asked twice)"
            ),
            confidence=1.0,
            provenance=[f"step:{step}"],
            refers_to=self._answer_id(f"{step}~2"),
            payload={"step": step, "kind": event.get("kind")},
        )

    def warning(self, step: str, t: float, event: Fields, *, kind: str = "") -> None:
        """Something that changed what a model saw or how the run went, in the VM's words."""
        details = {k: v for k, v in event.items() if k not in _META}
        shown = ", ".join(f"{k}={v}" for k, v in details.items())
        self.say(
            "notice",
            t,
            sender=VM,
            content=f"{kind.replace('_', ' ')} at step {step}" + (f": {shown}" if shown else ""),
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic=kind,
            payload={"step": step, **details},
        )

    # --- tools (the tool loop's events: tool_call, permission, approvals, tool_result) ------

    def tool_call(self, step: str, t: float, event: Fields) -> None:
        call = event.get("call") or {}
        name = str(call.get("name") or "tool")
        arguments = call.get("arguments")
        shown = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
        turn = event.get("turn")
        asked_by = self._answer_id(turn_step(step, turn)) if isinstance(turn, int) else None
        self._tool_calls[(step, turn, event.get("index"))] = self.say(
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

    def permission(self, step: str, t: float, event: Fields) -> None:
        decision, reason = event.get("decision"), event.get("reason")
        what = " ".join(str(x) for x in (event.get("kind"), event.get("action")) if x)
        asked = decision == "asked"
        self.say(
            "notice",
            t,
            sender=VM,
            content=f"permission {decision}: {event.get('tool')} {what} ({reason})",
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic="permission",
            refers_to=self._tool_calls.get((step, event.get("turn"), event.get("index"))),
            safety={"level": "review", "requires_human": True} if asked else None,
            payload=_details(step, event),
        )

    def tool_result(self, step: str, t: float, event: Fields) -> None:
        tool = str(event.get("tool") or "tool")
        call = self._tool_calls.pop((step, event.get("turn"), event.get("index")), None)
        if call is None:
            return  # its call was not journaled (cannot happen in one run): nothing to answer
        self._results[(step, str(event.get("call_id")))] = self.say(
            "response",
            t,
            sender=f"tool:{tool}",
            receiver=self._actor(step),
            content=str(event.get("content", "")),
            confidence=1.0,
            provenance=[f"tool:{tool}", f"step:{step}"],
            topic="tool_result",
            refers_to=call,
            payload={
                "step": step,
                "call_id": event.get("call_id"),
                "is_error": bool(event.get("is_error")),
                "omitted_bytes": event.get("omitted_bytes"),
            },
        )

    def run_finished(self, step: str, t: float, event: Fields) -> None:
        status, error = event.get("status"), event.get("error")
        payload = {"status": status, "error": error, "usage": event.get("usage")}
        # A call still open here ended with the run (a provider's configuration error aborts
        # it without an answer): only a kill leaves a call lost, which a resume says.
        for call, retried in list(self._retried.items()):
            for retry in retried:
                self._retry_notice(call, *retry, None)
        self._retried.clear()
        self._started.clear()
        self._sent.clear()
        self._contexts.clear()
        if status == "succeeded":
            outputs = event.get("outputs")
            payload["outputs"] = shown_values(outputs)
            # The answers the outputs hold, when an output is a session's binding.
            names = outputs if isinstance(outputs, dict) else {}
            made = [f"{self._ids}{self._bound[n]}" for n in names if n in self._bound]
            payload["output_answers"] = {
                n: f"{self._ids}{self._bound[n]}" for n in names if n in self._bound
            }
            self.say(
                "claim",
                t,
                sender=VM,
                content=f"run {self.run_id} succeeded",
                confidence=1.0,
                provenance=[JOURNAL_FILE, "outputs.json"],
                refers_to=made or None,
                payload=payload,
            )
            return
        self.say(
            "notice",
            t,
            sender=VM,
            content=f"run {self.run_id} {status}: {error}",
            confidence=1.0,
            provenance=[JOURNAL_FILE],
            safety={"level": "review", "issues": [{"code": f"RUN_{str(status).upper()}"}]},
            payload=payload,
        )


def _skip(translator: Translator, step: str, t: float, event: Fields) -> None:
    """Journaled for the VM's own use; nothing an auditor needs beyond the other rows."""


def _warning(kind: str) -> Callable[[Translator, str, float, Fields], None]:
    def row(translator: Translator, step: str, t: float, event: Fields) -> None:
        translator.warning(step, t, event, kind=kind)

    return row


# Journal event -> the VLP messages it becomes. A new journal event gets a row here.
ROWS: dict[type[Any], Row] = {
    ev.RunStarted: Row(("session_context",), Translator.run_started),
    ev.AgentsDeclared: Row(("notice",), Translator.agents),
    # The query is written with the call's end, and between the two a notice per
    # provider-level retry of the call (`request_retried`)
    ev.SessionStarted: Row((), Translator.session_started),
    ev.SessionFinished: Row(("query", "response|correction"), Translator.session_finished),
    ev.SessionFailed: Row(("query", "notice"), Translator.session_failed),  # the same
    # A provider-level retry: a notice written after its call's query (by the row above or
    # `session_finished`), or with the call's loss on resume.
    ev.RequestRetried: Row((), Translator.request_retried),
    ev.SessionCancelled: Row(("notice",), Translator.session_cancelled),
    # A resumed run's answers and handled failures: audited when they came. failure_handled
    # and _released are for resume; error_caught / the branch notes say them.
    ev.SessionServed: Row((), _skip),
    ev.FailureServed: Row((), _skip),
    ev.FailureHandled: Row((), _skip),
    ev.FailureReleased: Row((), _skip),
    ev.Decision: Row(("claim",), Translator.decision),
    ev.DecisionServed: Row((), _skip),
    ev.DecisionFailed: Row(("notice",), Translator.decision_failed),
    ev.RunFinished: Row(("claim|notice",), Translator.run_finished),
    # The tool loop (tools, permissions, approvals; `prose approve` appends approval_decided).
    ev.ToolCalled: Row(("query",), Translator.tool_call),
    ev.PermissionDecided: Row(("notice",), Translator.permission),
    ev.ApprovalRequested: Row(("query",), Translator.approval_requested),
    ev.ApprovalDecided: Row(("response",), Translator.approval_decided),
    ev.ToolResulted: Row(("response",), Translator.tool_result),
    # `ask` (`prose answer`, the web view or the API append question_answered)
    ev.QuestionAsked: Row(("query",), Translator.question_asked),
    ev.QuestionAnswered: Row(("response",), Translator.question_answered),
    # Early versions' tool turns: read for their exchanges (cassettes), never written now.
    ev.ModelTurn: Row((), _skip),
}
for _kind in (
    ev.MemoryUpdated,
    ev.ErrorCaught,
    ev.RaceDecided,
    ev.UnboundPlaceholder,
    ev.PromptOverBudget,
    ev.ContextTrimmed,
    ev.ContextWindowed,
    ev.SkillLoaded,
    ev.SkillMissing,
    ev.ApprovalIgnored,  # a recorded answer whose seal did not hold (forged, another run's)
    ev.QuestionIgnored,  # the same, for an answer to an `ask`
    ev.QuestionExpired,  # an `ask` with no default nobody answered in time
    ev.TypedInvalid,  # a typed answer that did not match its shape: asked again
    ev.TypedFailed,  # ...and the answer asked again did not either: the session fails
):
    ROWS[_kind] = Row(("notice",), _warning(_kind.ev))


def translate_lines(events: Iterable[Event], run_id: str, program: str) -> Iterator[bytes]:
    """The whole trail of a journal as NDJSON lines (for runs without `audit.ndjson`)."""
    return _lines(Translator(run_id, program), events)


def _lines(translator: Translator, events: Iterable[Event]) -> Iterator[bytes]:
    for event in events:
        translator.feed(event)
        if translator.out:
            yield from translator.take_lines()


def translate(events: Iterable[Event], run_id: str, program: str) -> Iterator[Message]:
    """The whole trail of a journal, message by message."""
    return (orjson.loads(line) for line in translate_lines(events, run_id, program))
