"""Validating (and repairing) a whole conversation, turn by turn."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from vpp.footer import Footer
from vpp.reply import read_reply
from vpp.start import ExcerptStart
from vpp.state import ConversationState, Expectation, expect, initial_state
from vpp.transcript import (
    CHECKED_ROLES,
    Message,
    Transcript,
    is_setup,
    messages_from,
    read_transcript,
)
from vpp.validate import ExchangeResult, Violation, command_violations, validate_exchange
from vpp.versions import (
    DEFAULT_LOCUS,
    DEFAULT_VERSION,
    LOCUS_NAME_1_5,
    Version,
    check_version,
)

INFERRED_START = "inferred-start"
SETUP = "protocol-setup"


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
    from_start: bool | None = None,
) -> TranscriptResult:
    """Check every exchange of a conversation: transcript text, `{role, content}`
    mappings, or a parsed `Transcript`. System/developer/tool turns are skipped.

    Without a `state`, a transcript cut from the middle of a conversation is checked
    from the state its first footers show (see `vpp.start`; the turn carries an
    `inferred-start` note). `from_start=True` checks it against the protocol's starting
    state instead: the transcript is then the whole conversation; `from_start=False`
    reads it as an excerpt. By default (None) a transcript that shows its start
    (`Transcript.shows_start`) is whole, and so is a lone 1.5 exchange; any other is an
    excerpt."""
    if isinstance(transcript, str):
        transcript = read_transcript(transcript)
    elif not isinstance(transcript, Transcript):
        transcript = messages_from(transcript)
    if from_start is None:
        # A single exchange is the start of a conversation, as the 1.5 reference runtime
        # checks one: its footer's index, cycle and locus are those of a fresh start.
        from_start = transcript.shows_start or (version == "1.5" and _one_exchange(transcript))
    excerpt = ExcerptStart(infer=state is None and not from_start)
    state = state or initial_state(version)
    if state.version != version:
        raise ValueError(f"state is for VPP {state.version}, not {version}")
    checked = [(n, m) for n, m in enumerate(transcript.messages, 1) if m.role in CHECKED_ROLES]
    turns: list[TurnResult] = []
    contents = [m.content for m in transcript.messages]
    pending: tuple[int, Message] | None = None
    setup = False  # the last turn was the setup: its acknowledgement is not checked
    for number, message in checked:
        if message.role == "user" and not turns and pending is None and is_setup(message):
            turns.append(TurnResult(number, "user", notes=(_setup_note(message),)))
            setup = True
            continue
        if message.role == "assistant" and setup:
            turns.append(TurnResult(number, "assistant", notes=(_setup_note(message),)))
            setup = False
            continue
        setup = False
        if message.role == "user":
            if pending is not None:
                turns.append(_unanswered(*pending, version))
            pending = (number, message)
            continue
        if pending is None:
            leading = read_reply(message.content, version).footer
            shown = excerpt.leading_reply(leading, state)
            if shown is None:
                turns.append(_stray_assistant(number, message))
                continue
            state = shown
            turns.append(TurnResult(number, "assistant", notes=(_leading_note(message),)))
            continue
        user_number, user = pending
        pending = None
        footer = read_reply(message.content, version).footer
        check = partial(
            validate_exchange,
            user.content,
            message.content,
            strict=strict,
            repair=repair,
            new_locus=_named_jump(expect(user.content, state), footer),
        )
        exchange, inferred = excerpt.check(check, user.content, footer, state)
        notes = (_inferred_note(message, exchange),) if inferred else ()
        state = exchange.next_state
        command_errors = _placed(exchange.command_violations, user)
        if version == "1.5":
            turns.append(TurnResult(user_number, "user", notes=command_errors))
        else:
            turns.append(TurnResult(user_number, "user", command_errors))
        turns.append(
            TurnResult(number, "assistant", _placed(exchange.violations, message), exchange, notes)
        )
        if exchange.repaired is not None:
            contents[number - 1] = exchange.repaired
    if pending is not None:
        turns.append(_unanswered(*pending, version))
    repaired = transcript.with_contents(contents) if repair else None
    return TranscriptResult(transcript, tuple(turns), state, repaired)


def _one_exchange(transcript: Transcript) -> bool:
    roles = [m.role for m in transcript.messages if m.role in CHECKED_ROLES]
    return roles == ["user", "assistant"]


def footers_version(transcript: Transcript) -> Version | None:
    """The VPP version every footer of the transcript's replies names (`Version=v1.5`),
    when they all name the same supported one; None otherwise."""
    named: set[str] = set()
    for message in transcript.messages:
        if message.role == "assistant":
            footer = read_reply(message.content, DEFAULT_VERSION).footer
            if footer is not None and footer.version is not None:
                named.add(footer.version.removeprefix("v"))
    if len(named) != 1:
        return None
    try:
        return check_version(named.pop())
    except ValueError:  # not a version this package knows
        return None


def _named_jump(expectation: Expectation, footer: Footer | None) -> str | None:
    """The name a 1.5 locus jump's reply gives its new locus. A runtime may name the locus
    it opens (`expect(..., new_locus=...)`); a transcript only shows the name in the footer.
    `locus-N` names and the current locus are not names: they are checked as usual."""
    if expectation.version != "1.5" or footer is None or footer.locus is None:
        return None
    command, name = expectation.command, footer.locus
    if not (command.ok and command.tag == "e") or name == expectation.before.locus:
        return None
    numbered = name.startswith("locus-") and name[6:].isdigit()  # the generic names
    if numbered or name == DEFAULT_LOCUS or not LOCUS_NAME_1_5.match(name):
        return None
    return name


def _setup_note(message: Message) -> Violation:
    text = (
        "The user pastes the protocol's header snippet (the setup, as a system prompt):"
        " not a command, so it is not checked, and the conversation starts here."
        if message.role == "user"
        else "The reply to the setup: it answers no command, so it is not checked."
    )
    return Violation(SETUP, text, message.line)


def _leading_note(message: Message) -> Violation:
    return Violation(
        INFERRED_START,
        "The transcript starts mid-conversation: this reply answers a command before the"
        " excerpt, so it is not checked; its footer gives the state the check starts from.",
        message.line,
    )


def _inferred_note(message: Message, exchange: ExchangeResult) -> Violation:
    before, tag = exchange.expectation.before, exchange.reply_tag
    return Violation(
        INFERRED_START,
        "The transcript starts mid-conversation (this reply's footer shows earlier turns):"
        f" checked from cycle {before.cycle}/3, locus {before.locus!r},"
        f" {before.count(tag)} earlier <{tag}> repl{'y' if before.count(tag) == 1 else 'ies'}."
        " Use --from-start if it is a whole conversation (or give it its system turn).",
        message.line,
    )


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
