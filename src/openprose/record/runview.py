"""What a run's journal says, digested for people: its sessions, decisions, errors, tool
calls, permissions and approvals, and the status of each top-level statement.

`prose show` prints a digest of the whole journal; `prose ui` keeps one per run and feeds it
the events appended since it last looked (`add`). Every record carries `v`, the digest's
`version` when it last changed, so a live view sends a browser only what changed (`delta`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from openprose.nodes import AgentDef, BlockDef, Stmt
from openprose.record.exchanges import Exchanges
from openprose.record.journal import JOURNAL_FILE

__all__ = ["PREVIEW_CHARS", "TOOL_EVENTS", "RunDigest", "in_full", "statements", "summary"]

TOOL_EVENTS = ("tool_call", "tool_result", "permission", "approval_requested", "approval_decided")
QUESTION_EVENTS = ("question_asked", "question_answered", "question_ignored")
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

    def add_all(self, events: Iterable[dict[str, Any]]) -> None:
        for event in events:
            self.add(event)

    def add(self, event: dict[str, Any]) -> None:
        self.events += 1
        self.version += 1
        kind = event.get("ev")
        try:
            if kind in TOOL_EVENTS:
                self._tool_event(event)
            elif kind in _SESSION_EVENTS:
                _SESSION_EVENTS[kind](self, event)
            elif kind in QUESTION_EVENTS:
                self._question_event(event)
            elif kind == "decision":
                self._append(
                    self.decisions,
                    {k: event.get(k) for k in ("step", "kind", "question", "verdict", "reason")},
                )
            elif kind in ("error_caught", "decision_failed"):
                shown = {k: v for k, v in event.items() if k != "t"}
                # A step is one execution of a statement: the same catch again is a resumed
                # run going the way it went (its failure served from the journal).
                if not any(_same(shown, earlier) for earlier in self.errors):
                    self._append(self.errors, shown)
            elif kind == "run_started":
                self.outcome = None  # a resumed run is going again
            elif kind == "run_finished":
                self.outcome = {k: event.get(k) for k in ("status", "error", "t")}
        except _SHAPE_ERRORS:
            self.damaged.append(
                f"{self.where}: event {self.events} ({str(kind)[:40]}) has the wrong shape"
            )

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

    def _started(self, event: dict[str, Any]) -> None:
        record = self._session(str(event["step"]))
        record.update(
            {k: event.get(k) for k in ("agent", "model", "binding")},
            kind=str(event.get("kind") or "session"),
            status="running",
            started=float(event["t"]),
            ended=None,
        )

    def _finished(self, event: dict[str, Any]) -> None:
        step = str(event["step"])
        response, request = event["response"], self._request(event)
        usage = response["usage"]
        tokens_in, tokens_out = int(usage["input_tokens"]), int(usage["output_tokens"])
        record = self._session(step)
        record.update(
            {k: event.get(k) for k in ("agent", "binding", "elapsed")},
            kind=str(event.get("kind") or "session"),
            model=str(event.get("model")),
            status="done",
            ended=float(event["t"]),
            attempt=int(event.get("attempt") or 1),
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cache_read_tokens=int(usage.get("cache_read_tokens", 0)),
            cache_write_tokens=int(usage.get("cache_write_tokens", 0)),
            tokens=tokens_in + tokens_out,
            cost=self._cost(str(response.get("model") or request.get("model")), usage),
            finish_reason=response.get("finish_reason"),
            memo=event.get("memo") if isinstance(event.get("memo"), dict) else None,
            inherited=event.get("inherited") if isinstance(event.get("inherited"), dict) else None,
            error=None,
            request=request,
            system=request.get("system"),
            answer=str(response["text"]),
            shape=request.get("response_schema") if request.get("structured") else None,
        )
        if record["started"] is None:  # a journal cut before its start event
            record["started"] = record["ended"] - float(event.get("elapsed") or 0)
        self.finished.append(step)

    def _failed(self, event: dict[str, Any]) -> None:
        record = self._session(str(event["step"]))
        request = self.exchanges.request_of(event)
        record.update(
            status="failed",
            ended=float(event["t"]),
            attempt=int(event.get("attempt") or record["attempt"] or 1),
            error=str(event.get("error")),
        )
        if isinstance(request, dict):
            record.update(request=request, system=request.get("system"))
        self._append(self.errors, {k: v for k, v in event.items() if k != "t"})

    def _cancelled(self, event: dict[str, Any]) -> None:
        step = str(event["step"])
        self._session(step).update(status="cancelled", ended=float(event["t"]))
        self.cancelled.append(step)

    def _request(self, event: dict[str, Any]) -> dict[str, Any]:
        """The whole request of an exchange: a tool-loop turn journals only what it added
        to the turn before (`request_delta`), rebuilt here as `prose show --cassette` does."""
        request = self.exchanges.request_of(event)
        if request is None and "request_delta" not in event:
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

    def _tool_event(self, event: dict[str, Any]) -> None:
        kind = event["ev"]
        where = f"{event.get('step', '')}~t{event.get('turn', 0)}.{event.get('index', 0)}"
        if kind == "tool_call":
            call = event.get("call") or {}
            self._append(
                self.tool_calls,
                {"at": where, "tool": call.get("name"), "arguments": call.get("arguments"),
                 "result": None, "is_error": None, "omitted_bytes": 0},
            )  # fmt: skip
        elif kind == "tool_result":
            for entry in reversed(self.tool_calls):
                if entry["at"] == where and entry["result"] is None:
                    entry.update(
                        result=event.get("content"),
                        is_error=event.get("is_error"),
                        omitted_bytes=event.get("omitted_bytes", 0),
                        v=self.version,
                    )
                    break
        elif kind == "permission":
            self._append(
                self.permissions,
                {
                    "at": where,
                    **{k: event.get(k) for k in ("tool", "kind", "action", "decision", "reason")},
                },
            )
        elif kind == "approval_requested":
            self.pending[str(event["id"])] = {
                k: event.get(k) for k in ("id", "tool", "kind", "action", "agent", "step")
            }
        else:
            # An answer whose seal does not hold (appended by an agent, another run's) is
            # shown as ignored, and its request stays pending: as `prose resume` sees it.
            why = self._answer_problem(event)
            if not why:
                self.pending.pop(str(event.get("id")), None)
            shown = {k: event.get(k) for k in ("id", "answer", "kind", "action", "by")}
            self._append(self.approvals, {**shown, "ignored": why} if why else shown)

    # --- questions (`ask`) ---------------------------------------------------------------

    def _question_event(self, event: dict[str, Any]) -> None:
        kind, key = event["ev"], str(event["id"])
        if kind == "question_asked":
            self.questions[key] = {
                **{k: event.get(k) for k in ("id", "step", "question", "options", "default")},
                **{k: event.get(k) for k in ("timeout", "digest")},
                "asked": event.get("t"),
                "answer": None,
            }
            return
        shown = self.questions.get(key)
        if shown is None:
            return  # an answer to no question of this journal
        if kind == "question_ignored":  # a resume did not trust the answer: asked again
            shown.update(answer=None, ignored=event.get("reason"))
            return
        why = self._reply_problem(event, shown)
        if why:
            shown["ignored"] = why
            return
        shown.update({k: event.get(k) for k in ("answer", "by", "user", "answered")}, ignored=None)

    def _reply_problem(self, event: dict[str, Any], shown: dict[str, Any]) -> str:
        from openprose.record.approval_seal import question_digest, reply_problem

        options = shown.get("options") or ()
        default = shown.get("default")
        digest = question_digest(
            str(shown.get("question")),
            [str(o) for o in options] if isinstance(options, list | tuple) else [],
            None if default is None else str(default),
        )
        run_id = Path(os.path.realpath(self.where)).parent.name
        return reply_problem(event, str(shown.get("id")), digest, run_id)

    def _answer_problem(self, event: dict[str, Any]) -> str:
        from openprose.record.approval_seal import KeyUnavailable, answer_problem, approval_key

        try:
            key = approval_key()
        except KeyUnavailable as error:
            return str(error)
        run_id = Path(os.path.realpath(self.where)).parent.name
        return answer_problem(event, run_id, key)

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


_SESSION_EVENTS: dict[str, Callable[[RunDigest, dict[str, Any]], None]] = {
    "session_started": RunDigest._started,
    "session_finished": RunDigest._finished,
    "session_failed": RunDigest._failed,
    "session_cancelled": RunDigest._cancelled,
}


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
