"""Validating (and repairing) a whole conversation, turn by turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vpp.state import ConversationState, initial_state
from vpp.transcript import CHECKED_ROLES, Message, Transcript, messages_from, read_transcript
from vpp.validate import ExchangeResult, Violation, command_violations, validate_exchange
from vpp.versions import Version


@dataclass(frozen=True)
class TurnResult:
    """One checked turn; `index` is the 1-based position in the input, lines are file lines."""

    index: int
    role: str
    violations: tuple[Violation, ...] = ()
    exchange: ExchangeResult | None = None  # set on assistant turns that answer a user turn
    # What is worth knowing but breaks no rule: in 1.5, the errors of a user command the
    # reply answered with its recovery body (an invalid command is a normal path there).
    notes: tuple[Violation, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.violations

    def as_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "index": self.index,
            "role": self.role,
            "ok": self.ok,
            "violations": [v.as_dict() for v in self.violations],
        }
        if self.notes:
            found["notes"] = [v.as_dict() for v in self.notes]
        return found


@dataclass(frozen=True)
class TranscriptResult:
    transcript: Transcript
    turns: tuple[TurnResult, ...]
    final_state: ConversationState
    repaired: Transcript | None = field(default=None)

    @property
    def ok(self) -> bool:
        return all(turn.ok for turn in self.turns)

    @property
    def violations(self) -> list[Violation]:
        return [v for turn in self.turns for v in turn.violations]

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "turns": [turn.as_dict() for turn in self.turns]}


def validate_transcript(
    transcript: str | Sequence[Mapping[str, Any]] | Transcript,
    version: Version = "1.4",
    *,
    strict: bool = True,
    repair: bool = False,
    state: ConversationState | None = None,
) -> TranscriptResult:
    """Check every exchange of a conversation: transcript text, `{role, content}`
    mappings, or a parsed `Transcript`. System/developer/tool turns are skipped."""
    if isinstance(transcript, str):
        transcript = read_transcript(transcript)
    elif not isinstance(transcript, Transcript):
        transcript = messages_from(transcript)
    state = state or initial_state(version)
    if state.version != version:
        raise ValueError(f"state is for VPP {state.version}, not {version}")
    checked = [(n, m) for n, m in enumerate(transcript.messages, 1) if m.role in CHECKED_ROLES]
    turns: list[TurnResult] = []
    contents = [m.content for m in transcript.messages]
    pending: tuple[int, Message] | None = None
    for number, message in checked:
        if message.role == "user":
            if pending is not None:
                turns.append(_unanswered(*pending, version))
            pending = (number, message)
            continue
        if pending is None:
            turns.append(_stray_assistant(number, message))
            continue
        user_number, user = pending
        pending = None
        exchange = validate_exchange(
            user.content, message.content, state, strict=strict, repair=repair
        )
        state = exchange.next_state
        command_errors = _placed(exchange.command_violations, user)
        if version == "1.5":
            turns.append(TurnResult(user_number, "user", notes=command_errors))
        else:
            turns.append(TurnResult(user_number, "user", command_errors))
        turns.append(
            TurnResult(number, "assistant", _placed(exchange.violations, message), exchange)
        )
        if exchange.repaired is not None:
            contents[number - 1] = exchange.repaired
    if pending is not None:
        turns.append(_unanswered(*pending, version))
    repaired = transcript.with_contents(contents) if repair else None
    return TranscriptResult(transcript, tuple(turns), state, repaired)


def _placed(violations: Sequence[Violation], message: Message) -> tuple[Violation, ...]:
    """Move message-relative lines to transcript lines, in line order."""
    placed = (Violation(v.code, v.message, message.file_line(v.line), v.column) for v in violations)
    return tuple(sorted(placed, key=lambda v: v.line))


def _unanswered(number: int, message: Message, version: Version) -> TurnResult:
    missing = Violation(
        "missing-assistant-turn", "This user turn has no assistant reply.", message.line
    )
    found = (*_placed(command_violations(message.content, version), message), missing)
    return TurnResult(number, "user", found)


def _stray_assistant(number: int, message: Message) -> TurnResult:
    stray = Violation(
        "unexpected-assistant-turn",
        "This assistant turn does not answer a user turn; it was not checked.",
        message.line,
    )
    return TurnResult(number, "assistant", (stray,))
