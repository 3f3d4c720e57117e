"""The run's audit trail: every journal event that matters to an auditor, as VLP 1.1
messages in `audit.ndjson` (one VLP session per run, `seq` 1, 2, 3...).

The trail is a pure function of the journal: `Translator` turns the event sequence into
messages whose ids (`{run_id}/{seq}`) and timestamps (the event's `t`) depend only on that
sequence. So a resumed run re-derives what the crash kept from being written — it counts
the messages already on disk, translates the journal again without writing those, and goes
on from the next `seq` — and a run made before the trail existed can be shown from its
journal. `ROWS` is the one table of event -> message kinds; an event it does not list
writes nothing (`tests/openprose/vm/test_audit.py` checks every event the VM emits is
listed).

`AuditTrail` keeps the writing off the event loop: `add` hands the raw event to the
process's background writer (`openprose.vm.writer`, which writes binding files too), whose
thread translates and writes whole batches (one `write` each). A process killed before a
flush loses only what the resume re-derives.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from openprose.vm.writer import shared_writer
from vlp import PROTOCOL, VLPError, message_problems
from vlp.validate import is_surely_valid

VM = "prose-vm"  # sender/receiver name of the VM itself
EVALUATOR = "evaluator"
# A model states no confidence of its own; its answers are recorded at this neutral value
# and say so in their payload (docs/decisions.md, Issue 13).
UNSTATED = 0.5
AUDIT_FILE = "audit.ndjson"

Event = dict[str, Any]
Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Row:
    kinds: tuple[str, ...]  # the VLP message types the event becomes, in order
    translate: Callable[[Translator, Event], None]


_SECONDS: dict[int, str] = {}  # whole second -> its RFC 3339 text (a run's events share few)


def _timestamp(t: float) -> str:
    """The VLP timestamp (UTC, milliseconds) of a journal time."""
    whole = int(t)
    text = _SECONDS.get(whole)
    if text is None:
        if len(_SECONDS) > 4096:
            _SECONDS.clear()
        text = _SECONDS[whole] = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S.")
    return f"{text}{min(round((t - whole) * 1_000_000) // 1000, 999):03d}Z"


class Translator:
    """Journal events in, VLP messages out (`messages` collects them until taken)."""

    def __init__(self, run_id: str, program: str) -> None:
        self.run_id = run_id
        self.program = program
        self.seq = 0
        self.messages: list[Message] = []
        self._started: dict[str, Event] = {}  # step -> its session_started
        self._last: dict[str, str] = {}  # step -> id of its latest answer or failure
        self._answers: dict[str, str] = {}  # call step -> id of the answer it got
        self._tool_calls: dict[tuple[str, object, object], str] = {}  # (step, turn, index)
        self._approvals: dict[str, str] = {}  # approval id -> its query
        self._agents: dict[str, str] = {}  # session step -> who acts in it (tools' caller)

    # --- the one door --------------------------------------------------------------------

    def feed(self, event: Event) -> None:
        row = ROWS.get(str(event.get("ev")))
        if row is not None:
            row.translate(self, event)

    def take(self) -> list[Message]:
        taken, self.messages = self.messages, []
        return taken

    def say(
        self,
        kind: str,
        event: Event,
        *,
        sender: str,
        content: str,
        confidence: float,
        t: float | None = None,
        **fields: Any,
    ) -> str:
        """One message, numbered and stamped; returns its id."""
        self.seq += 1
        ident = f"{self.run_id}/{self.seq}"
        message: Message = {
            "id": ident,
            "protocol": PROTOCOL,
            "type": kind,
            "timestamp": _timestamp(event.get("t", 0.0) if t is None else t),
            "session_id": self.run_id,
            "seq": self.seq,
            "sender": sender,
            "content": content,
            "confidence": confidence,
        }
        for key, value in fields.items():
            if value is not None:
                message[key] = value
        self.messages.append(message)
        return ident

    # --- rows ----------------------------------------------------------------------------

    def run_started(self, event: Event) -> None:
        resumed = bool(event.get("resumed"))
        what = "resumed" if resumed else "started"
        self.say(
            "session_context",
            event,
            sender=VM,
            content=f"run {self.run_id} of {self.program} {what}",
            confidence=1.0,
            provenance=["journal.jsonl"],
            payload={"program": self.program, "resumed": resumed},
        )

    def agents(self, event: Event) -> None:
        agents = event.get("agents") or {}
        rules = [
            f"{name}: {kind} {rule}"
            for name, spec in agents.items()
            for kind, rule in (spec.get("permissions") or {}).items()
        ]
        self.say(
            "notice",
            event,
            sender=VM,
            content="agents of " + (event.get("step") or "the program") + ": " + ", ".join(agents),
            confidence=1.0,
            provenance=[f"step:{event.get('step') or 'program'}"],
            constraints=rules or None,
            payload={"agents": agents},
        )

    def session_started(self, event: Event) -> None:
        step = event["step"]
        self._started[step] = event
        if "~" not in step:  # a session's own step (not a judgment's or a tool turn's call)
            self._agents[step] = _agent_name(event.get("agent"), event.get("model"))

    def _asked(self, event: Event, request: dict[str, Any] | None, attempt: int, t: float) -> str:
        step = event["step"]
        started = self._started.get(step, {})
        kind = event.get("kind") or started.get("kind") or "session"
        agent = event.get("agent") or started.get("agent")
        alias = event.get("model") or started.get("model")
        messages = (request or {}).get("messages") or []
        prompt = str(messages[-1].get("content", "")) if messages else ""
        previous = self._last.get(step)  # a retry answers the failure before it
        if previous is None and kind == "judgment" and step.endswith("~2"):
            previous = self._answers.get(step[:-1] + "1")  # asked again: the first did not parse
        payload: dict[str, Any] = {"step": step, "kind": kind, "model": alias, "attempt": attempt}
        if request and request.get("system"):
            payload["system"] = request["system"]
        return self.say(
            "query",
            event,
            t=t,
            sender=VM,
            receiver=_agent_name(agent, alias),
            content=prompt or f"({kind} request of step {step})",
            confidence=1.0,
            topic=kind,
            refers_to=previous,
            payload=payload,
        )

    def session_finished(self, event: Event) -> None:
        step = event["step"]
        request, response = event.get("request") or {}, event.get("response") or {}
        attempt = int(event.get("attempt") or 1)
        t = float(event.get("t", 0.0))
        query = self._asked(event, request, attempt, t - float(event.get("elapsed") or 0.0))
        kind = event.get("kind") or "session"
        model = response.get("model") or request.get("model") or event.get("model")
        first = self._answers.get(step[:-1] + "1") if step.endswith("~2") else None
        payload = {
            "step": step,
            "kind": kind,
            "model": model,
            "usage": response.get("usage"),
            "finish_reason": response.get("finish_reason"),
            "elapsed": event.get("elapsed"),
            "confidence": "unstated by the model",
        }
        if first is not None:
            payload["answers"] = query  # a correction refers to what it replaces only
        answer = self.say(
            "correction" if first is not None else "response",
            event,
            sender=_agent_name(event.get("agent"), event.get("model")),
            receiver=VM,
            content=str(response.get("text", "")),
            confidence=UNSTATED,
            provenance=[f"model:{model}", f"step:{step}"],
            refers_to=first or query,
            payload=payload,
        )
        self._answers[step] = answer
        self._last.pop(step, None)
        self._started.pop(step, None)

    def session_failed(self, event: Event) -> None:
        step = event["step"]
        started = self._started.get(step, {})
        attempt = int(event.get("attempt") or 1)
        query = self._asked(event, event.get("request"), attempt, float(event.get("t", 0.0)))
        self._last[step] = self.say(
            "notice",
            event,
            sender=VM,
            content=f"attempt {attempt} of step {step} failed: {event.get('error')}",
            confidence=1.0,
            provenance=[f"model:{started.get('model')}", f"step:{step}"],
            refers_to=query,
            payload={"step": step, "attempt": attempt, "error": event.get("error")},
        )

    def session_cancelled(self, event: Event) -> None:
        step = event["step"]
        self._started.pop(step, None)
        self.say(
            "notice",
            event,
            sender=VM,
            content=f"step {step} cancelled before its answer came (a race was decided)",
            confidence=1.0,
            provenance=[f"step:{step}"],
            payload={"step": step, "attempt": event.get("attempt")},
        )

    def decision(self, event: Event) -> None:
        step = event["step"]
        attempts = event.get("attempts")
        answer = self._answers.get(f"{step}~{attempts}") if attempts else None
        kind, question = event.get("kind"), event.get("question")
        verdict, reason = event.get("verdict"), event.get("reason")
        shown = "true" if verdict is True else "false" if verdict is False else verdict
        subject = f" **{question}**" if question else ""
        self.say(
            "claim",
            event,
            sender=EVALUATOR if answer else VM,
            receiver=VM if answer else None,
            content=f"{kind}{subject} -> {shown}: {reason}",
            confidence=UNSTATED if answer else 1.0,
            provenance=[f"step:{step}"],
            refers_to=answer,
            payload={"step": step, "kind": kind, "verdict": verdict, "reason": reason},
        )

    def decision_failed(self, event: Event) -> None:
        step = event["step"]
        self.say(
            "notice",
            event,
            sender=VM,
            content=(
                f"the evaluator gave no usable {event.get('kind')} answer for "
                f"**{event.get('question')}** (asked twice)"
            ),
            confidence=1.0,
            provenance=[f"step:{step}"],
            refers_to=self._answers.get(f"{step}~2"),
            payload={"step": step, "kind": event.get("kind")},
        )

    def warning(self, event: Event) -> None:
        """Something that changed what a model saw or how the run went, in the VM's words."""
        step, kind = event.get("step") or "", str(event["ev"])
        details = {k: v for k, v in event.items() if k not in ("ev", "step", "t")}
        shown = ", ".join(f"{k}={v}" for k, v in details.items())
        self.say(
            "notice",
            event,
            sender=VM,
            content=f"{kind.replace('_', ' ')} at step {step}" + (f": {shown}" if shown else ""),
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic=kind,
            payload={"step": step, **details},
        )

    # --- tools (the tool loop's events: tool_call, permission, approvals, tool_result) ------

    def tool_call(self, event: Event) -> None:
        step = event["step"]
        call = event.get("call") or {}
        name = str(call.get("name") or "tool")
        arguments = call.get("arguments")
        shown = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
        self._tool_calls[(step, event.get("turn"), event.get("index"))] = self.say(
            "query",
            event,
            sender=self._agents.get(step, "model"),
            receiver=f"tool:{name}",
            content=f"{name}({shown})",
            confidence=1.0,
            topic="tool_call",
            refers_to=self._answers.get(step),
            payload={"step": step, "tool": name, "call_id": call.get("id"), "arguments": arguments},
        )

    def permission(self, event: Event) -> None:
        step = event["step"]
        decision, reason = event.get("decision"), event.get("reason")
        what = " ".join(str(x) for x in (event.get("kind"), event.get("action")) if x)
        asked = decision == "asked"
        self.say(
            "notice",
            event,
            sender=VM,
            content=f"permission {decision}: {event.get('tool')} {what} ({reason})",
            confidence=1.0,
            provenance=[f"step:{step}"],
            topic="permission",
            refers_to=self._tool_calls.get((step, event.get("turn"), event.get("index"))),
            safety={"level": "review", "requires_human": True} if asked else None,
            payload={k: v for k, v in event.items() if k not in ("ev", "t")},
        )

    def approval_requested(self, event: Event) -> None:
        step = event["step"]
        agent = event.get("agent")
        self._approvals[str(event.get("id"))] = self.say(
            "query",
            event,
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
            payload={k: v for k, v in event.items() if k not in ("ev", "t")},
        )

    def approval_decided(self, event: Event) -> None:
        request = self._approvals.get(str(event.get("id")))
        if request is None:
            return  # a decision without its request in this journal: nothing to answer
        self.say(
            "response",
            event,
            sender=f"human ({event.get('by') or 'unknown'})",
            receiver=VM,
            content=f"{event.get('answer')}: {event.get('kind')} {event.get('action')}",
            confidence=1.0,
            provenance=[f"approval:{event.get('id')}"],
            topic="approval",
            refers_to=request,
            payload={k: v for k, v in event.items() if k not in ("ev", "t")},
        )

    def tool_result(self, event: Event) -> None:
        step = event["step"]
        tool = str(event.get("tool") or "tool")
        call = self._tool_calls.pop((step, event.get("turn"), event.get("index")), None)
        if call is None:
            return  # its call was not journaled (cannot happen in one run): nothing to answer
        self.say(
            "response",
            event,
            sender=f"tool:{tool}",
            receiver=self._agents.get(step, "model"),
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

    def run_finished(self, event: Event) -> None:
        status, error = event.get("status"), event.get("error")
        payload = {"status": status, "error": error, "usage": event.get("usage")}
        if status == "succeeded":
            self.say(
                "claim",
                event,
                sender=VM,
                content=f"run {self.run_id} succeeded",
                confidence=1.0,
                provenance=["journal.jsonl", "outputs.json"],
                payload=payload,
            )
            return
        self.say(
            "notice",
            event,
            sender=VM,
            content=f"run {self.run_id} {status}: {error}",
            confidence=1.0,
            provenance=["journal.jsonl"],
            safety={"level": "review", "issues": [{"code": f"RUN_{str(status).upper()}"}]},
            payload=payload,
        )


def _agent_name(agent: object, alias: object) -> str:
    if agent:
        return str(agent)
    return f"model:{alias}" if alias else "model"


def _skip(translator: Translator, event: Event) -> None:
    """Journaled for the VM's own use; nothing an auditor needs beyond the other rows."""


# Journal event -> the VLP messages it becomes. A new journal event gets a row here.
ROWS: dict[str, Row] = {
    "run_started": Row(("session_context",), Translator.run_started),
    "agents": Row(("notice",), Translator.agents),
    "session_started": Row((), Translator.session_started),  # the query is written with its end
    "session_finished": Row(("query", "response|correction"), Translator.session_finished),
    "session_failed": Row(("query", "notice"), Translator.session_failed),
    "session_cancelled": Row(("notice",), Translator.session_cancelled),
    "session_served": Row((), _skip),  # a resumed run's answer: audited when it came
    "failure_served": Row((), _skip),  # a resumed run's handled failure: audited when it came
    "failure_handled": Row((), _skip),  # for resume; error_caught / the branch notes say it
    "failure_released": Row((), _skip),
    "decision": Row(("claim",), Translator.decision),
    "decision_served": Row((), _skip),
    "decision_failed": Row(("notice",), Translator.decision_failed),
    "memory_updated": Row(("notice",), Translator.warning),
    "error_caught": Row(("notice",), Translator.warning),
    "race_decided": Row(("notice",), Translator.warning),
    "unbound_placeholder": Row(("notice",), Translator.warning),
    "prompt_over_budget": Row(("notice",), Translator.warning),
    "context_trimmed": Row(("notice",), Translator.warning),
    "context_windowed": Row(("notice",), Translator.warning),
    "run_finished": Row(("claim|notice",), Translator.run_finished),
    # The tool loop (tools, permissions, approvals; `prose approve` appends approval_decided).
    "tool_call": Row(("query",), Translator.tool_call),
    "permission": Row(("notice",), Translator.permission),
    "approval_requested": Row(("query",), Translator.approval_requested),
    "approval_decided": Row(("response",), Translator.approval_decided),
    "tool_result": Row(("response",), Translator.tool_result),
    "skill_loaded": Row(("notice",), Translator.warning),
    "skill_missing": Row(("notice",), Translator.warning),
}


def encode(message: Message) -> bytes:
    """One NDJSON line; a message the VLP validator refuses is a bug here, never written."""
    if not is_surely_valid(message):
        problems = message_problems(message)
        if problems:
            raise VLPError(problems)
    return orjson.dumps(message) + b"\n"


def translate(events: Iterable[Event], run_id: str, program: str) -> Iterator[Message]:
    """The whole trail of a journal (for runs without `audit.ndjson`, and for tests)."""
    translator = Translator(run_id, program)
    for event in events:
        translator.feed(event)
        yield from translator.take()


def written_count(path: Path) -> int:
    """How many messages `path` holds; a last line torn by a crash is cut off first."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return 0
    end = data.rfind(b"\n") + 1
    if end != len(data):
        os.truncate(path, end)
    return data.count(b"\n", 0, end)  # the trail has no blank lines


class AuditTrail:
    """Writes one run's `audit.ndjson` from its events, in batches, on the process's
    background writer (`openprose.vm.writer`; one thread for every run: a batch runs
    thousands in one process)."""

    def __init__(self, path: Path, run_id: str, program: str) -> None:
        self.path = path
        self.translator = Translator(run_id, program)
        self.error: Exception | None = None
        self.batches = 0

    @classmethod
    def resume(cls, path: Path, run_id: str, program: str, journal: Iterable[Event]) -> AuditTrail:
        """Continue a trail: the journal's messages not yet on disk are written first."""
        trail = cls(path, run_id, program)
        written = written_count(path)
        translator = trail.translator
        lines: list[bytes] = []
        for event in journal:
            translator.feed(event)
            fresh = translator.take()
            lines.extend(encode(m) for m in fresh if m["seq"] > written)
        trail._write(lines)
        return trail

    def add(self, event: str, step: str, t: float, fields: dict[str, Any]) -> None:
        """Take one event (called by `Shared.emit`, on the event loop: kept to an append)."""
        shared_writer().put(AuditTrail._flush, self, (event, step, t, fields))

    def _flush(self, batch: list[tuple[str, str, float, dict[str, Any]]]) -> None:
        translator = self.translator
        for event, step, t, fields in batch:
            translator.feed({"ev": event, "step": step, "t": t, **fields})
        try:
            self._write([encode(m) for m in translator.take()])
        except (OSError, VLPError) as error:  # reported by close(); the journal has it all
            self.error = error

    def _write(self, lines: list[bytes]) -> None:
        if not lines:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, b"".join(lines))
        finally:
            os.close(fd)
        self.batches += 1

    def close(self) -> None:
        """Return once every event added so far is written."""
        shared_writer().flush()

    async def aclose(self) -> None:
        """`close` for a coroutine, without holding a thread while it waits."""
        await shared_writer().aflush()
