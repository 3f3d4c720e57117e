"""What a run's journal says, digested for people: its sessions, decisions, errors, tool
calls, permissions and approvals, and the status of each top-level statement.

`prose show` prints a digest of the whole journal; `prose ui` keeps one per run and feeds it
the events appended since it last looked (`add`). Every record carries `v`, the digest's
`version` when it last changed, so a live view sends a browser only what changed (`delta`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from openprose.nodes import AgentDef, BlockDef, Stmt
from openprose.record.codec import EventDamaged, as_record, decode, fields_of, name_in
from openprose.record.events import (
    ApprovalDecided,
    ApprovalRequested,
    Decision,
    DecisionFailed,
    ErrorCaught,
    Event,
    PermissionDecided,
    QuestionAnswered,
    QuestionAsked,
    QuestionIgnored,
    RunFinished,
    RunStarted,
    SessionCancelled,
    SessionFailed,
    SessionFinished,
    SessionStarted,
    ToolCalled,
    ToolResulted,
)
from openprose.record.exchanges import Exchanges
from openprose.record.journal import JOURNAL_FILE

__all__ = ["PREVIEW_CHARS", "RunDigest", "in_full", "statements", "summary"]

PREVIEW_CHARS = 120  # of a prompt or answer in a session's summary; the rest on request
# A session record's long texts: left out of summaries (`summary`), served one session at a time.
_LONG = ("request", "system", "answer")
_SHAPE_ERRORS = (KeyError, TypeError, ValueError, OverflowError, AttributeError)


class Price(Protocol):
    """A model's price (`providers.prices.Price`): what one request cost."""

    def cost(
        self, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0
    ) -> float: ...


PriceOf = Callable[[str], Price | None]


@dataclass
class RunDigest:
    """The journal's events sorted into what a person looks at. `where` names the journal in
    the `damaged` notes (an event of the wrong shape is skipped and named there); `price_of`
    gives each session's cost (None: the model has no price)."""

    where: str = JOURNAL_FILE
    price_of: PriceOf | None = None
    version: int = 0
    events: int = 0
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    finished: list[str] = field(default_factory=list)  # steps in the order they finished
    decisions: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)  # `ask`, by id
    damaged: list[str] = field(default_factory=list)
    outcome: dict[str, Any] | None = None  # the last `run_finished` event's fields
    exchanges: Exchanges = field(default_factory=Exchanges, repr=False)

    def add_all(self, records: Iterable[Mapping[str, Any]]) -> None:
        for record in records:
            self.add(record)

    def add(self, record: Mapping[str, Any]) -> None:
        """One journal line as read: decoded by the codec, then `add_event`; a line of the
        wrong shape is counted and named in `damaged`."""
        try:
            event, t = decode(record)
        except EventDamaged:
            self.events += 1
            self.version += 1
            self._damaged(name_in(record))
            return
        self.add_event(event, t)

    def add_event(self, event: Event, t: float) -> None:
        """One event and the time the journal gave it."""
        self.events += 1
        self.version += 1
        try:
            self._sort(event, t)
        except _SHAPE_ERRORS:
            self._damaged(event.ev)

    def _damaged(self, name: str) -> None:
        self.damaged.append(f"{self.where}: event {self.events} ({name[:40]}) has the wrong shape")

    def _sort(self, event: Event, t: float) -> None:
        match event:
            case SessionStarted():
                self._started(event, t)
            case SessionFinished():
                self._finished(event, t)
            case SessionFailed():
                self._failed(event, t)
            case SessionCancelled(step=step):
                self._session(step).update(status="cancelled", ended=t)
                self.cancelled.append(step)
            case ToolCalled() | ToolResulted() | PermissionDecided():
                self._tool_event(event)
            case ApprovalRequested() | ApprovalDecided():
                self._approval_event(event)
            case QuestionAsked() | QuestionAnswered() | QuestionIgnored():
                self._question_event(event, t)
            case Decision(step=step, kind=kind, question=question, verdict=verdict):
                shown = {"step": step, "kind": kind, "question": question, "verdict": verdict}
                self._append(self.decisions, {**shown, "reason": event.reason})
            case ErrorCaught() | DecisionFailed():
                shown = as_record(event)
                # A step is one execution of a statement: the same catch again is a resumed
                # run going the way it went (its failure served from the journal).
                if not any(_same(shown, earlier) for earlier in self.errors):
                    self._append(self.errors, shown)
            case RunStarted():
                self.outcome = None  # a resumed run is going again
            case RunFinished(status=status, error=error):
                self.outcome = {"status": status, "error": error, "t": t}

    # --- sessions -----------------------------------------------------------------------

    def _session(self, step: str) -> dict[str, Any]:
        record = self.sessions.get(step)
        if record is None:
            record = self.sessions[step] = {
                "id": step,
                "step": step,
                "kind": "session",
                "agent": None,
                "model": None,
                "binding": None,
                "status": "running",
                "started": None,
                "ended": None,
                "elapsed": None,
                "attempt": 0,
                "input_tokens": 0,
                "output_tokens": 0,
                "cache_read_tokens": 0,
                "cache_write_tokens": 0,
                "tokens": 0,
                "cost": None,
                "finish_reason": None,
                "memo": None,  # {key, run, step}: answered from the memo of that run
                "inherited": None,  # a fork's: {run, step} of its parent, or {set: name}
                "error": None,
                "request": {},  # as sent; `in_full` turns its messages into text
                "system": None,
                "answer": "",
                "shape": None,  # the JSON Schema a typed session asked for
            }
        record["v"] = self.version
        return record

    def _started(self, event: SessionStarted, t: float) -> None:
        record = self._session(event.step)
        record.update(
            agent=event.agent,
            model=event.model,
            binding=event.binding,
            kind=str(event.kind or "session"),
            status="running",
            started=float(t),
            ended=None,
        )

    def _finished(self, event: SessionFinished, t: float) -> None:
        step = event.step
        response, request = event.response, self._request(event)
        usage = response["usage"]
        tokens_in, tokens_out = int(usage["input_tokens"]), int(usage["output_tokens"])
        record = self._session(step)
        record.update(
            agent=event.agent,
            binding=event.binding,
            elapsed=event.elapsed,
            kind=str(event.kind or "session"),
            model=str(event.model),
            status="done",
            ended=float(t),
            attempt=int(event.attempt or 1),
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cache_read_tokens=int(usage.get("cache_read_tokens", 0)),
            cache_write_tokens=int(usage.get("cache_write_tokens", 0)),
            tokens=tokens_in + tokens_out,
            cost=self._cost(str(response.get("model") or request.get("model")), usage),
            finish_reason=response.get("finish_reason"),
            memo=event.memo if isinstance(event.memo, dict) else None,
            inherited=event.inherited if isinstance(event.inherited, dict) else None,
            error=None,
            request=request,
            system=request.get("system"),
            answer=str(response["text"]),
            shape=request.get("response_schema") if request.get("structured") else None,
        )
        if record["started"] is None:  # a journal cut before its start event
            record["started"] = record["ended"] - float(event.elapsed or 0)
        self.finished.append(step)

    def _failed(self, event: SessionFailed, t: float) -> None:
        record = self._session(event.step)
        request = self.exchanges.request_of(event)
        record.update(
            status="failed",
            ended=float(t),
            attempt=int(event.attempt or record["attempt"] or 1),
            error=str(event.error),
        )
        if isinstance(request, dict):
            record.update(request=request, system=request.get("system"))
        self._append(self.errors, as_record(event))

    def _request(self, event: SessionFinished) -> dict[str, Any]:
        """The whole request of an exchange: a tool-loop turn journals only what it added
        to the turn before (`request_delta`), rebuilt here as `prose show --cassette` does."""
        request = self.exchanges.request_of(event)
        if request is None and event.request_delta is None:
            raise KeyError("request")  # an exchange without its request is damaged
        return request or {}  # a delta whose base turn a crash lost: its prompt is unknown

    def _cost(self, model: str, usage: dict[str, Any]) -> float | None:
        price = self.price_of(model) if self.price_of is not None else None
        if price is None:
            return None
        return price.cost(
            int(usage["input_tokens"]),
            int(usage["output_tokens"]),
            int(usage.get("cache_read_tokens", 0)),
            int(usage.get("cache_write_tokens", 0)),
        )

    # --- tool loop ----------------------------------------------------------------------

    def _tool_event(self, event: ToolCalled | ToolResulted | PermissionDecided) -> None:
        where = f"{event.step}~t{event.turn or 0}.{event.index or 0}"
        match event:
            case ToolCalled(call=call):
                call = call or {}
                self._append(
                    self.tool_calls,
                    {"at": where, "tool": call.get("name"), "arguments": call.get("arguments"),
                     "result": None, "is_error": None, "omitted_bytes": 0},
                )  # fmt: skip
            case ToolResulted():
                for entry in reversed(self.tool_calls):
                    if entry["at"] == where and entry["result"] is None:
                        entry.update(
                            result=event.content,
                            is_error=event.is_error,
                            omitted_bytes=event.omitted_bytes or 0,
                            v=self.version,
                        )
                        break
            case PermissionDecided(tool=tool, kind=kind, action=action, decision=decision):
                shown = {"tool": tool, "kind": kind, "action": action, "decision": decision}
                self._append(self.permissions, {"at": where, **shown, "reason": event.reason})

    def _approval_event(self, event: ApprovalRequested | ApprovalDecided) -> None:
        if isinstance(event, ApprovalRequested):
            self.pending[str(event.id)] = {
                "id": event.id,
                "tool": event.tool,
                "kind": event.kind,
                "action": event.action,
                "agent": event.agent,
                "step": event.step,
            }
            return
        # An answer whose seal does not hold (appended by an agent, another run's) is shown
        # as ignored, and its request stays pending: as `prose resume` sees it.
        why = self._answer_problem(event)
        if not why:
            self.pending.pop(str(event.id), None)
        shown = {
            "id": event.id,
            "answer": event.answer,
            "kind": event.kind,
            "action": event.action,
            "by": event.by,
        }
        self._append(self.approvals, {**shown, "ignored": why} if why else shown)

    # --- questions (`ask`) ---------------------------------------------------------------

    def _question_event(
        self, event: QuestionAsked | QuestionAnswered | QuestionIgnored, t: float
    ) -> None:
        key = str(event.id)
        if isinstance(event, QuestionAsked):
            self.questions[key] = {
                "id": event.id,
                "step": event.step,
                "question": event.question,
                "options": event.options,
                "default": event.default,
                "timeout": event.timeout,
                "digest": event.digest,
                "asked": t,
                "answer": None,
            }
            return
        shown = self.questions.get(key)
        if shown is None:
            return  # an answer to no question of this journal
        if isinstance(event, QuestionIgnored):  # a resume did not trust the answer: asked again
            shown.update(answer=None, ignored=event.reason)
            return
        why = self._reply_problem(event, shown)
        if why:
            shown["ignored"] = why
            return
        shown.update(
            answer=event.answer, by=event.by, user=event.user, answered=event.answered, ignored=None
        )

    def _reply_problem(self, event: QuestionAnswered, shown: dict[str, Any]) -> str:
        from openprose.record.approval_seal import question_digest, reply_problem

        options = shown.get("options") or ()
        default = shown.get("default")
        digest = question_digest(
            str(shown.get("question")),
            [str(o) for o in options] if isinstance(options, list | tuple) else [],
            None if default is None else str(default),
        )
        run_id = Path(os.path.realpath(self.where)).parent.name
        return reply_problem(fields_of(event), str(shown.get("id")), digest, run_id)

    def _answer_problem(self, event: ApprovalDecided) -> str:
        from openprose.record.approval_seal import KeyUnavailable, answer_problem, approval_key

        try:
            key = approval_key()
        except KeyUnavailable as error:
            return str(error)
        run_id = Path(os.path.realpath(self.where)).parent.name
        return answer_problem(fields_of(event), run_id, key)

    def _append(self, records: list[dict[str, Any]], record: dict[str, Any]) -> None:
        records.append({**record, "n": len(records), "v": self.version})

    # --- views --------------------------------------------------------------------------

    def summary(self, since: int = 0) -> dict[str, Any]:
        """Everything changed after version `since` (everything for 0), long texts cut to
        previews: sessions and list records as changed; the pending requests in full."""
        return {
            "version": self.version,
            "sessions": [summary(s) for s in self.sessions.values() if s["v"] > since],
            "decisions": _since(self.decisions, since),
            "errors": _since(self.errors, since),
            "tool_calls": _since(self.tool_calls, since),
            "permissions": _since(self.permissions, since),
            "approvals": _since(self.approvals, since),
            "pending_approvals": list(self.pending.values()),
            "questions": list(self.questions.values()),
            "damaged": list(self.damaged),
        }


def summary(session: dict[str, Any]) -> dict[str, Any]:
    """A session record without its long texts: the prompt's and answer's first characters."""
    shown = {k: v for k, v in session.items() if k not in _LONG}
    shown["prompt_preview"] = _prompt(session["request"])[:PREVIEW_CHARS]
    shown["answer_preview"] = session["answer"][:PREVIEW_CHARS]
    return shown


def _since(records: list[dict[str, Any]], since: int) -> list[dict[str, Any]]:
    if not since:
        return list(records)
    return [r for r in records if r["v"] > since]


def _messages(request: dict[str, Any]) -> list[dict[str, str]]:
    """A request's conversation as role and text (tool calls and results as JSON text)."""
    shown = []
    for message in request.get("messages") or []:
        text = message.get("content")
        parts = [text if isinstance(text, str) else orjson.dumps(text).decode()]
        for extra in ("tool_calls", "tool_results"):
            if message.get(extra):
                parts.append(f"{extra}: {orjson.dumps(message[extra]).decode()}")
        shown.append({"role": str(message.get("role")), "text": "\n".join(p for p in parts if p)})
    return shown


def _same(record: dict[str, Any], kept: dict[str, Any]) -> bool:
    """Whether `kept` (a list record, with its `n` and `v`) is `record` again."""
    return all(kept.get(k) == v for k, v in record.items()) and len(kept) == len(record) + 2


def _prompt(request: dict[str, Any]) -> str:
    """The last user message's text: what the session was asked."""
    for message in reversed(request.get("messages") or []):
        if message.get("role") == "user":
            text = message.get("content")
            return text if isinstance(text, str) else orjson.dumps(text).decode()
    return ""


def in_full(session: dict[str, Any]) -> dict[str, Any]:
    """A session record with its conversation as role and text (`messages`) in place of the
    request it was sent as."""
    shown = {k: v for k, v in session.items() if k != "request"}
    shown["messages"] = _messages(session["request"])
    return shown


def statements(body: Sequence[Stmt], digest: RunDigest, run_status: str) -> list[dict[str, Any]]:
    """The program's top-level statements with their lines and status: `done`, `running`,
    `failed`, `stopped` (its run ended while it ran), `cancelled`, `waiting` (an approval or
    an answer to an `ask` is pending), `pending` (not reached yet) or `definition` (an agent or block: nothing runs). A statement that makes no model call counts as done once a later one has
    started or the run has succeeded."""
    states: dict[int, set[str]] = {}
    counts: dict[int, int] = {}
    for step, session in digest.sessions.items():
        top = _top(step)
        states.setdefault(top, set()).add(session["status"])
        counts[top] = counts.get(top, 0) + 1
    waiting = {_top(str(p.get("step") or "")) for p in digest.pending.values()}
    waiting.update(_top(str(q["step"])) for q in digest.questions.values() if q["answer"] is None)
    reached = max(states, default=0)
    shown = []
    for number, stmt in enumerate(body, start=1):
        seen = states.get(number, set())
        if isinstance(stmt, AgentDef | BlockDef):  # nothing runs there (a block runs where called)
            status = "definition"
        elif number in waiting:
            status = "waiting"
        elif "failed" in seen and run_status != "running":
            status = "failed"
        elif "running" in seen or "failed" in seen:
            status = "running" if run_status == "running" else "stopped"
        elif seen:
            status = "cancelled" if seen == {"cancelled"} else "done"
        elif number < reached or run_status == "succeeded":
            status = "done"
        else:
            status = "pending"
        shown.append(
            {
                "number": number,
                "line": stmt.span.line,
                "end_line": stmt.span.end_line,
                "kind": type(stmt).__name__.lower(),
                "status": status,
                "sessions": counts.get(number, 0),
            }
        )
    return shown


def _top(step: str) -> int:
    """The top-level statement a step id belongs to (`5:1[3].1` → 5); 0 for none."""
    digits = ""
    for char in step:
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else 0
