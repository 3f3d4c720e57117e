"""Journal events in, VLP messages out: the `Translator` (`add`, a `match` over the event
classes) and `ROWS`, the one table of event type -> message kinds (see the package's
docstring)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

from openprose.record import events as ev
from openprose.record.audit.messages import (
    _CUTS,
    _EMPTY,
    _HOLE,
    _HOLE_BYTES,
    _LINE,
    _REQUEST,
    _RESPONSE,
    _TEMPLATES,
    _UNMADE,
    VM,
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
from openprose.record.audit.notices import NOTICES, NoticeRows
from openprose.record.audit.people import PeopleRows
from openprose.record.audit.tools import ToolRows
from openprose.record.codec import Recorded, decode, decode_all, fields_of
from openprose.record.events import Event
from openprose.record.journal import JOURNAL_FILE
from vlp import PROTOCOL

_TURN = re.compile(r"~t(\d+)$")  # a tool loop's later turn (`steps.turn_step`)


class Translator(ToolRows, PeopleRows, NoticeRows):
    """Journal events in, VLP messages out, as NDJSON lines (`out` holds them until
    taken)."""

    def __init__(self, run_id: str, program: str, *, contained: bool = False) -> None:
        self.run_id = run_id
        self.program = program
        self.seq = 0
        # The lines made and not yet taken (a session's two lines are one item).
        self.out: list[bytes] = []
        # `contained`: an event it cannot translate is kept here and it stops (the run goes
        # on: the journal holds every event); else `add` raises.
        self.error: Exception | None = None
        self._contained = contained
        self._ids = f"{run_id}/"
        self._started: dict[str, ev.SessionStarted] = {}  # step -> its start, while out
        self._sent: dict[str, float] = {}  # call step -> the time of its session_started
        self._last: dict[str, str] = {}  # step -> id of its latest answer or failure
        self._answers: dict[str, int] = {}  # call step -> seq of the answer it got
        self._tool_calls: dict[tuple[str, object, object], str] = {}  # (step, turn, index)
        self._approvals: dict[str, str] = {}  # approval id -> its query
        self._questions: dict[str, str] = {}  # `ask` question id -> its query
        self._agents: dict[str, ev.SessionStarted] = {}  # session step -> its start
        self._results: dict[tuple[str, str], str] = {}  # (session step, call id) -> result
        self._bound: dict[str, int] = {}  # binding name -> seq of the answer it holds now
        self._contexts: set[str] = set()  # call steps whose request named a `context:`
        # call step -> its provider-level retries (`request_retried`), written after its query
        self._retried: dict[str, list[tuple[float, ev.RequestRetried]]] = {}
        # A session statement's constants -> its two lines with fields for the rest.
        self._templates: dict[tuple[Any, ...], tuple[bytes, ...] | None] = {}

    # --- the doors ------------------------------------------------------------------------

    def feed(self, line: Mapping[str, Any]) -> None:
        """One journal line as read back, decoded by the codec (`EventDamaged` when it
        lacks what its event needs)."""
        self.add(*decode(line))

    def add(self, event: Event, t: float) -> None:
        """One event, as `Shared.emit` records it or the codec decodes it. Most frequent
        first: a class pattern is an `isinstance` check. The audit trail's subscriber itself
        (`AuditTrail.add`), so a session costs no call more than its rows."""
        if self.error is not None:
            return
        try:
            match event:
                case ev.SessionStarted():
                    self.session_started(event, t)
                case ev.SessionFinished():
                    self.session_finished(event, t)
                case ev.ToolCalled():
                    self.tool_call(event, t)
                case ev.ToolResulted():
                    self.tool_result(event, t)
                case ev.PermissionDecided():
                    self.permission(event, t)
                case ev.SessionFailed():
                    self.session_failed(event, t)
                case ev.RequestRetried():
                    self.request_retried(event, t)
                case ev.Decision():
                    self.decision(event, t)
                case ev.DecisionFailed():
                    self.decision_failed(event, t)
                case ev.SessionCancelled():
                    self.session_cancelled(event, t)
                case ev.RunStarted():
                    self.run_started(event, t)
                case ev.RunFinished():
                    self.run_finished(event, t)
                case ev.AgentsDeclared():
                    self.agents(event, t)
                case ev.ApprovalRequested():
                    self.approval_requested(event, t)
                case ev.ApprovalDecided():
                    self.approval_decided(event, t)
                case ev.QuestionAsked():
                    self.question_asked(event, t)
                case ev.QuestionAnswered():
                    self.question_answered(event, t)
                case _ if type(event) in NOTICES:
                    self.warning(event, t)
                case _:
                    pass  # for the VM's own use (`ROWS` lists them with no message), or unknown
        except Exception as error:
            if not self._contained:
                raise
            self.error = error

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

    def run_started(self, event: ev.RunStarted, t: float) -> None:
        resumed = bool(event.resumed)
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
                "inputs": shown_values(event.inputs),
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
                provenance=[f"model:{started.model}", f"step:{step}"],
                topic="answer_lost",
                refers_to=previous or None,
                payload={
                    "step": step,
                    "kind": started.kind or "session",
                    "model": started.model,
                    "agent": started.agent,
                    "binding": started.binding,
                    "sent": sent,
                },
            )
        self._started.clear()
        self._sent.clear()
        self._contexts.clear()

    def agents(self, event: ev.AgentsDeclared, t: float) -> None:
        step = event.step
        agents = event.agents or {}
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

    def session_started(self, event: ev.SessionStarted, t: float) -> None:
        step = event.step
        self._started[step] = event
        self._sent[step] = t  # for a call a kill leaves unanswered (`_lost`)
        if event.context:
            self._contexts.add(step)
        if "~" not in step:  # a session's own step (not a judgment's or a tool turn's call)
            self._agents[step] = event  # its agent's name is made if a tool is called

    def _asked(
        self,
        step: str,
        request: Any,
        delta: Any,
        attempt: int,
        t: float,
        kind: Any,
        alias: Any,
        agent: Any,
    ) -> str:
        """The query of one attempt (valid by construction: see the module's docstring);
        `kind`, `alias` and `agent` are the event's own (the session's start fills gaps),
        `delta` a tool turn's `request_delta`."""
        if not (kind and alias and agent):
            kind, alias, agent = self._filled(step, kind, alias, agent)
        messages = request.get("messages") if request else None
        prompt = str(messages[-1].get("content", "")) if messages else ""
        # A retry answers the failure before it.
        previous: str | list[str] | None = self._last.get(step) if self._last else None
        if previous is None and kind == "judgment" and step.endswith("~2"):
            previous = self._answer_id(step[:-1] + "1")  # asked again: the first did not parse
        payload = _query_payload(
            step, kind, alias, attempt, request.get("system") if request else None
        )
        if not request and isinstance(delta, dict):
            prompt, refers_to = self._turn(step, delta, payload)
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

    def _filled(self, step: str, kind: Any, alias: Any, agent: Any) -> tuple[Any, Any, Any]:
        """An answer's or failure's kind, model and agent, its session's start filling the
        gaps (an event of an early version, a failure, which names none of them)."""
        started = self._started.get(step)
        if started is None:
            return kind or "session", alias, agent
        return kind or started.kind or "session", alias or started.model, agent or started.agent

    def _with_context(
        self, step: str, previous: str | list[str] | None, payload: dict[str, Any]
    ) -> str | list[str] | None:
        """`previous` and the answers the request's `context:` names hold now (the query
        refers to them; `payload.context` lists the names, those no answer holds included)."""
        started = self._started.get(step)
        names = (started.context if started is not None else None) or ()
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

    def session_finished(self, event: ev.SessionFinished, t: float) -> None:
        """The query and its answer (valid by construction: see the module's docstring).
        A first answer to a plain request (the common case: no retry before it, no
        correction, no tool turn) is written from its statement's template (`_template`):
        only the session's own values are encoded; `_exchange` makes every other."""
        step, request, response = event.step, event.request, event.response
        try:
            messages, system, asked_model = _REQUEST(request)
            text, usage, finish_reason, answered_model = _RESPONSE(response)
            prompt = messages[-1]["content"]
        except (KeyError, TypeError, IndexError, AttributeError):  # a tool turn, a hand edit
            prompt = None
        binding = event.binding
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
            self._exchange(event, t)
            return
        kind, alias, agent, attempt = event.kind, event.model, event.agent, event.attempt
        asked_alias: str | None
        asked_agent: str | None
        if kind and alias and agent:
            asked_kind, asked_alias, asked_agent = kind, alias, agent
        else:  # the session's start fills the gaps (`_filled`, inline: a session without
            # an agent comes here, and a call costs ~0.5k instructions)
            started = self._started.get(step)
            if started is None:
                asked_kind, asked_alias, asked_agent = kind or "session", alias, agent
            else:
                asked_kind = kind or started.kind or "session"
                asked_alias, asked_agent = alias or started.model, agent or started.agent
        model = answered_model or asked_model or alias
        key = (asked_kind, asked_alias, asked_agent, system, kind, alias, agent, model, attempt)
        try:
            template = self._templates.get(key, _UNMADE)
        except TypeError:  # an unhashable value (a journal edited by hand)
            template = None
        if template is _UNMADE:
            template = self._template(key)
        if template is None:
            self._exchange(event, t)
            return
        q0, q1, q2, q3, q4, q5, a0, a1, a2, a3, a4, a5, a6, a7, a8 = template
        step_json = _dumps(step)
        seq = self.seq + 1
        answer = seq + 1
        query_seq, answer_seq = b"%d" % seq, b"%d" % answer
        # The three follow each other in the answer's payload: one object without its braces.
        elapsed = event.elapsed
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

    def _exchange(self, event: ev.SessionFinished, t: float) -> None:
        """`session_finished` built message by message."""
        step, elapsed, kind = event.step, event.elapsed, event.kind
        request, response = event.request or _EMPTY, event.response or _EMPTY
        alias, agent, attempt = event.model, event.agent, int(event.attempt or 1)
        model = response.get("model") or request.get("model") or alias
        sent = t - (elapsed or 0.0)
        query = self._asked(step, request, event.request_delta, attempt, sent, kind, alias, agent)
        self._retries_of(step, query)
        first = self._answer_id(step[:-1] + "1") if step.endswith("~2") else None
        binding = event.binding
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
        return "model" if started is None else _agent_name(started.agent, started.model)

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

    def session_failed(self, event: ev.SessionFailed, t: float) -> None:
        step = event.step
        started = self._started.get(step)
        attempt = int(event.attempt or 1)
        elapsed = event.elapsed
        sent = t - elapsed if isinstance(elapsed, int | float) else t  # stamped when sent
        # A failure names no kind, model or agent: its session's start gives them.
        request, delta = event.request, event.request_delta
        query = self._asked(step, request, delta, attempt, sent, None, None, None)
        self._retries_of(step, query)
        if not event.retried:  # the call's last attempt: nothing more is out
            self._started.pop(step, None)
            self._sent.pop(step, None)
            self._contexts.discard(step)
        self._last[step] = self.say(
            "notice",
            t,
            sender=VM,
            content=f"attempt {attempt} of step {step} failed: {event.error}",
            confidence=1.0,
            provenance=[f"model:{started.model if started else None}", f"step:{step}"],
            refers_to=query,
            payload={
                "step": step,
                "attempt": attempt,
                "error": event.error,
                "status": event.status,
                "elapsed": elapsed,
                "retried": event.retried,
            },
        )

    def request_retried(self, event: ev.RequestRetried, t: float) -> None:
        """A request the provider retried by itself (a transient failure: 429, 5xx, a lost
        connection): said after the query of its call, which is written when the call ends."""
        self._retried.setdefault(event.step, []).append((t, event))

    def _retries_of(self, step: str, query: str) -> None:
        """The provider-level retries of `step`'s attempt, after its query."""
        if self._retried:
            for t, event in self._retried.pop(step, ()):
                self._retry_notice(step, t, event, query)

    def _retry_notice(
        self, step: str, t: float, event: ev.RequestRetried, query: str | None
    ) -> str:
        status = event.status
        http = f"HTTP {status}" if status is not None else "no HTTP answer"
        return self.say(
            "notice",
            t,
            sender=VM,
            content=(
                f"request {event.request} of attempt {event.attempt} of step "
                f"{step} failed ({http}: {event.error}) after {event.elapsed} s; "
                f"sent again in {event.delay} s"
            ),
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic="request_retried",
            refers_to=query,
            payload=_details(step, fields_of(event)),
        )

    def session_cancelled(self, event: ev.SessionCancelled, t: float) -> None:
        step = event.step
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
            payload={"step": step, "attempt": event.attempt},
        )

    def run_finished(self, event: ev.RunFinished, t: float) -> None:
        status, error = event.status, event.error
        payload = {"status": status, "error": error, "usage": event.usage}
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
            outputs = event.outputs
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


# Journal event -> the VLP message types it becomes, in order (`Translator.add` makes
# them). A new journal event gets a row here and a case there.
ROWS: dict[type[Any], tuple[str, ...]] = {
    ev.RunStarted: ("session_context",),
    ev.AgentsDeclared: ("notice",),
    # The query is written with the call's end, and between the two a notice per
    # provider-level retry of the call (`request_retried`)
    ev.SessionStarted: (),
    ev.SessionFinished: ("query", "response|correction"),
    ev.SessionFailed: ("query", "notice"),  # the same
    # A provider-level retry: a notice written after its call's query (by the row above or
    # `session_finished`), or with the call's loss on resume.
    ev.RequestRetried: (),
    ev.SessionCancelled: ("notice",),
    # A resumed run's answers and handled failures: audited when they came. failure_handled
    # and _released are for resume; error_caught / the branch notes say them.
    ev.SessionServed: (),
    ev.FailureServed: (),
    ev.FailureHandled: (),
    ev.FailureReleased: (),
    ev.Decision: ("claim",),
    ev.DecisionServed: (),
    ev.DecisionFailed: ("notice",),
    ev.RunFinished: ("claim|notice",),
    # The tool loop (tools, permissions, approvals; `prose approve` appends approval_decided).
    ev.ToolCalled: ("query",),
    ev.PermissionDecided: ("notice",),
    ev.ApprovalRequested: ("query",),
    ev.ApprovalDecided: ("response",),
    ev.ToolResulted: ("response",),
    # `ask` (`prose answer`, the web view or the API append question_answered)
    ev.QuestionAsked: ("query",),
    ev.QuestionAnswered: ("response",),
    # Early versions' tool turns: read for their exchanges (cassettes), never written now.
    ev.ModelTurn: (),
} | {kind: ("notice",) for kind in NOTICES}


def translate_lines(
    lines: Iterable[Mapping[str, Any]], run_id: str, program: str
) -> Iterator[bytes]:
    """The whole trail of a journal's lines as NDJSON lines (for runs without
    `audit.ndjson`); `EventDamaged` at a line the codec cannot decode."""
    return _lines(Translator(run_id, program), decode_all(lines))


def _lines(translator: Translator, events: Iterable[Recorded]) -> Iterator[bytes]:
    for event, t in events:
        translator.add(event, t)
        if translator.out:
            yield from translator.take_lines()


def translate(lines: Iterable[Mapping[str, Any]], run_id: str, program: str) -> Iterator[Message]:
    """The whole trail of a journal, message by message."""
    return (orjson.loads(line) for line in translate_lines(lines, run_id, program))
