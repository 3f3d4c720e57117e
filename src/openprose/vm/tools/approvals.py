"""Who answers a `prompt` permission: a person on the terminal, `--yes`, answers recorded in
the journal (`prose approve` / `prose deny`), or nobody — then the run stops `waiting`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Literal, Protocol

from cliconventions.terminal import one_line

__all__ = [
    "Answer",
    "ApprovalPending",
    "ApprovalRequest",
    "Approver",
    "NobodyApprover",
    "PreApprover",
    "RecordedAnswer",
    "RecordedApprover",
    "TerminalApprover",
]

Answer = Literal["once", "run", "deny"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    id: str  # stable across a resume: the step, the tool call and the kind
    kind: str  # read | write | execute | bash | network
    action: str  # the exact path, command or URL
    tool: str
    agent: str | None
    digest: str = ""  # of the exact action, arguments included (approval_seal.action_digest)

    def describe(self) -> str:
        """The request in words, on one line, every control and hidden character escaped
        (a command's `\\r\\x1b[2K` cannot hide its start): what is approved is what runs."""
        who = f"agent {one_line(self.agent)}" if self.agent else "a session"
        return f"{who} wants to {VERBS.get(self.kind, self.kind)} {one_line(self.action)}"

    def to_dict(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "kind": self.kind,
            "action": self.action,
            "tool": self.tool,
            "agent": self.agent,
            "digest": self.digest,
        }


VERBS = {
    "read": "read",
    "write": "write",
    "execute": "execute",
    "bash": "run the shell command",
    "network": "fetch",
}


class ApprovalPending(Exception):
    """Nobody can answer now: the run stops as `waiting` until `prose approve`/`deny`."""

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__(request.describe())
        self.request = request


class Approver(Protocol):
    async def ask(self, request: ApprovalRequest) -> Answer: ...


@dataclass(slots=True)
class PreApprover:
    """`--yes`: every prompt is allowed once, unattended (each still journaled)."""

    async def ask(self, request: ApprovalRequest) -> Answer:
        return "once"


@dataclass(slots=True)
class NobodyApprover:
    async def ask(self, request: ApprovalRequest) -> Answer:
        raise ApprovalPending(request)


@dataclass(frozen=True, slots=True)
class RecordedAnswer:
    """An answer from `prose approve`/`deny`, the web view or the API whose seal held."""

    answer: Answer
    kind: str
    action: str  # what the person was shown
    digest: str  # of the exact call answered (tool, kind, action, arguments)
    by: str


@dataclass(slots=True)
class RecordedApprover:
    """Answers given while the run waited (checked by `vm.approvals.honoured_answers`).
    An answer serves only the request with its id, kind, action and digest — never a
    wildcard; a request whose action differs from the one answered is reported through
    `on_mismatch` and goes to `fallback`, as does a request with no answer."""

    answers: Mapping[str, RecordedAnswer]
    fallback: Approver = field(default_factory=NobodyApprover)
    on_mismatch: Callable[[ApprovalRequest, RecordedAnswer], None] | None = None

    async def ask(self, request: ApprovalRequest) -> Answer:
        recorded = self.answers.get(request.id)
        if recorded is not None:
            if (recorded.kind, recorded.action, recorded.digest) == (
                request.kind,
                request.action,
                request.digest,
            ):
                return recorded.answer
            if self.on_mismatch is not None:
                self.on_mismatch(request, recorded)
        return await self.fallback.ask(request)


class TerminalApprover:
    """Asks on the terminal, one question at a time (parallel tool calls queue up).
    `hold` pauses whatever else draws on the terminal (the live progress table) meanwhile."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self.hold: Callable[[], AbstractContextManager[object]] = nullcontext

    async def ask(self, request: ApprovalRequest) -> Answer:
        async with self._lock:
            with self.hold():
                return await asyncio.to_thread(self._ask_blocking, request)

    @staticmethod
    def _ask_blocking(request: ApprovalRequest) -> Answer:
        prompt = (
            f"\nprose: {request.describe()}\n"
            f"  [y] allow once   [a] allow for this run   [n] deny  > "
        )
        while True:
            sys.stderr.write(prompt)
            sys.stderr.flush()
            line = sys.stdin.readline()
            if not line:  # end of input: nobody is there
                return "deny"
            choice = line.strip().lower()
            if choice in ("y", "yes", "o", "once"):
                return "once"
            if choice in ("a", "all", "run", "always"):
                return "run"
            if choice in ("n", "no", "d", "deny"):
                return "deny"
