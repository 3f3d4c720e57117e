"""A VPP conversation with a live model, the protocol kept by the runtime.

`Session` sends the protocol's header snippet as the system prompt, tells the model the
exact tag line and footer its next reply needs (the runtime knows them from the state),
and validates every reply with the package's validator. What is mechanical (tag line,
footer, nested wrappers, the escape choices, an invalid command's recovery body) is
repaired; a reply whose content breaks a rule (an empty body, too many questions,
unlisted assumptions, a body that is a placeholder or echoes a command: `body_check`) is
sent back to the model with the violations named, a bounded number of times. Every
attempt and its violations are kept on the turn; the history the model sees holds what it
said, never the runtime's repair of it. The embedded model decodes inside the exact frame
(`reply_grammar`); hosted models get the frame in the prompt.

An invalid user command needs no model at all: the protocol fixes the whole reply (`<c>`
with the recovery body), so the runtime writes it.

The provider layer (openprose.providers) is imported only when a session talks to a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from vpp.body_check import BODY_RULES, body_violations
from vpp.plain_prompt import plain_messages, plain_system
from vpp.reply_grammar import reply_grammar, reply_token_budget
from vpp.snippets import header_snippet
from vpp.state import ConversationState, Expectation, expect, initial_state
from vpp.validate import ExchangeResult, Violation, format_reply, validate_exchange
from vpp.versions import Version, check_version

if TYPE_CHECKING:
    from openprose.providers.base import Message, Provider

__all__ = ["CONTENT_RULES", "Attempt", "Outcome", "Session", "Turn"]

#: Violations only the model can fix: its content, not the protocol's framing.
CONTENT_RULES = (
    frozenset({"empty-body", "too-many-questions", "assumptions-not-listed"}) | BODY_RULES
)
DEFAULT_MAX_REASKS = 2
DEFAULT_MAX_TOKENS = 512
BODY_PLACEHOLDER = "(your answer)"
LOCAL = "local"  # the provider that decodes inside a request's grammar

Outcome = Literal["valid", "repaired", "reasked", "runtime", "failed"]


@dataclass(frozen=True, slots=True)
class Attempt:
    """One reply from the model and the protocol violations found in it."""

    text: str
    violations: tuple[Violation, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "violations": [v.as_dict() for v in self.violations]}


@dataclass(frozen=True, slots=True)
class Turn:
    """One exchange: the user's message, the reply kept in the conversation, how it was got.

    `outcome`: `valid` (first reply compliant), `repaired` (framing fixed by the runtime),
    `reasked` (a later attempt, perhaps repaired, was compliant), `runtime` (an invalid
    command; the protocol's reply, no model call), `failed` (still violating after the
    re-asks: `violations` says how)."""

    user: str
    reply: str
    outcome: Outcome
    attempts: tuple[Attempt, ...]
    violations: tuple[Violation, ...]  # what the last attempt broke; empty unless `failed`
    state: ConversationState  # after this turn

    @property
    def ok(self) -> bool:
        return self.outcome != "failed"

    @property
    def first_try_ok(self) -> bool:
        return self.outcome in ("valid", "runtime")

    def as_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "reply": self.reply,
            "ok": self.ok,
            "outcome": self.outcome,
            "attempts": [a.as_dict() for a in self.attempts],
            "violations": [v.as_dict() for v in self.violations],
            "state": self.state.to_dict(),
        }


@dataclass
class Session:
    """A conversation held to VPP `version` with `provider` answering as `model`.

    Use `await session.send_async(message)` inside an event loop, or `session.send(message)`
    from plain code (the session then runs its own loop; call `close()` at the end)."""

    provider: Provider
    version: Version | str = "1.5"
    model: str = "default"
    max_reasks: int = DEFAULT_MAX_REASKS
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float | None = None
    strict: bool = True
    state: ConversationState = field(init=False)
    turns: list[Turn] = field(default_factory=list, init=False)
    _history: list[Message] = field(default_factory=list, init=False, repr=False)
    _runner: asyncio.Runner | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.version = check_version(self.version)
        self.state = initial_state(self.version)
        if self.max_reasks < 0:
            raise ValueError("max_reasks must be >= 0")

    @property
    def header(self) -> str:
        return header_snippet(self.version)

    # --- talking ------------------------------------------------------------------------

    def send(self, user_message: str, *, new_locus: str | None = None) -> Turn:
        if self._runner is None:
            self._runner = asyncio.Runner()
        return self._runner.run(self.send_async(user_message, new_locus=new_locus))

    async def send_async(self, user_message: str, *, new_locus: str | None = None) -> Turn:
        """One exchange: the reply to `user_message`, kept to the protocol."""
        expectation = expect(user_message, self.state, new_locus=new_locus)
        if not expectation.command.ok:
            reply = format_reply(expectation, "")
            turn = self._finish(user_message, reply, "runtime", (), (), new_locus)
            return turn
        from openprose.providers.base import Message

        conversation = [*self._history, Message("user", user_message)]
        attempts: list[Attempt] = []
        result: ExchangeResult | None = None
        for number in range(self.max_reasks + 1):
            text = await self._complete(conversation, expectation)
            result = self._check(user_message, text, new_locus)
            attempts.append(Attempt(text, result.violations))
            if result.ok:
                outcome: Outcome = "valid" if number == 0 else "reasked"
                return self._finish(user_message, text, outcome, attempts, (), new_locus)
            repaired = self._repaired(user_message, result, new_locus)
            if repaired is not None:
                outcome = "repaired" if number == 0 else "reasked"
                return self._finish(user_message, repaired, outcome, attempts, (), new_locus)
            conversation += [Message("assistant", text), Message("user", _reask(result))]
        assert result is not None
        kept = result.repaired or attempts[-1].text
        return self._finish(user_message, kept, "failed", attempts, result.violations, new_locus)

    async def aclose(self) -> None:
        await self.provider.aclose()

    def close(self) -> None:
        if self._runner is None:
            asyncio.run(self.aclose())
            return
        self._runner.run(self.aclose())
        self._runner.close()
        self._runner = None

    # --- the record ---------------------------------------------------------------------

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as `{role, content}` records (the header as a system turn; each
        assistant turn with its outcome and attempts), as `vpp check` reads them."""
        records: list[dict[str, Any]] = [{"role": "system", "content": self.header}]
        for turn in self.turns:
            records += turn_records(turn)
        return records

    # --- inside -------------------------------------------------------------------------

    async def _complete(self, conversation: Sequence[Message], expectation: Expectation) -> str:
        from openprose.providers.base import ModelRequest

        if self.provider.name == LOCAL:  # decodes inside the frame: only the body to ask for
            request = ModelRequest(
                model=self.model,
                messages=tuple(plain_messages(conversation, expectation)),
                system=plain_system(expectation),
                max_tokens=max(self.max_tokens, reply_token_budget()),
                temperature=self.temperature,
                grammar=reply_grammar(expectation),
            )
        else:
            request = ModelRequest(
                model=self.model,
                messages=tuple(conversation),
                system=f"{self.header}\n{_this_reply(expectation)}",
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
        return (await self.provider.complete(request)).text

    def _check(self, user: str, reply: str, new_locus: str | None) -> ExchangeResult:
        result = validate_exchange(
            user, reply, self.state, strict=self.strict, repair=True, new_locus=new_locus
        )
        empty = _empty_body(reply, result)
        found = (*([empty] if empty else []), *body_violations(user, reply, result.expectation))
        if not found:
            return result
        return ExchangeResult(
            result.expectation,
            result.reply_tag,
            result.command_violations,
            (*result.violations, *found),
            result.next_state,
            result.repaired,
        )

    def _repaired(self, user: str, result: ExchangeResult, new_locus: str | None) -> str | None:
        """The runtime's repair of a reply whose only faults are framing, if it holds."""
        if result.repaired is None or any(v.code in CONTENT_RULES for v in result.violations):
            return None
        return result.repaired if self._check(user, result.repaired, new_locus).ok else None

    def _finish(
        self,
        user: str,
        reply: str,
        outcome: Outcome,
        attempts: Sequence[Attempt],
        violations: Sequence[Violation],
        new_locus: str | None,
    ) -> Turn:
        from_state = validate_exchange(user, reply, self.state, new_locus=new_locus).next_state
        self.state = from_state
        turn = Turn(user, reply, outcome, tuple(attempts), tuple(violations), from_state)
        self.turns.append(turn)
        if outcome != "runtime":  # the model never saw an invalid command; keep it so
            from openprose.providers.base import Message

            # What the model said, not the runtime's repair of it: the model is never shown
            # words as its own that it did not write (the turn records the repair).
            said = attempts[-1].text if attempts else reply
            self._history += [Message("user", user), Message("assistant", said)]
        return turn


def turn_records(turn: Turn) -> list[dict[str, Any]]:
    """The two transcript records of a turn; the assistant's carries how it was got."""
    how = {"outcome": turn.outcome, "attempts": [a.as_dict() for a in turn.attempts]}
    return [
        {"role": "user", "content": turn.user},
        {"role": "assistant", "content": turn.reply, "vpp_session": how},
    ]


def _this_reply(expectation: Expectation) -> str:
    """The exact frame of the next reply, which the runtime knows and a model may not."""
    frame = format_reply(expectation, BODY_PLACEHOLDER)
    return (
        "\nYour next reply must be exactly this, with your answer in place of "
        f"{BODY_PLACEHOLDER}:\n{frame}"
    )


def _empty_body(reply: str, result: ExchangeResult) -> Violation | None:
    """A reply with nothing but framing says nothing: only the model can fill it."""
    if result.expectation.recovery_body is not None or result.repaired is None:
        return None
    if any(v.code == "empty-body" for v in result.violations):
        return None  # the validator says so itself
    lines = [line for line in result.repaired.split("\n")[1:-1] if line.strip()]
    if lines:
        return None
    return Violation("empty-body", "The reply has no content between the tag and the footer.")


def _reask(result: ExchangeResult) -> str:
    listed = "\n".join(f"- {v.code}: {v.message}" for v in result.violations)
    return (
        "Your reply broke the protocol:\n"
        f"{listed}\n"
        "Answer my last message again, following the protocol exactly."
    )
