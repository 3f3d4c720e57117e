"""Safety gating: may downstream automation act on a thread?

``block`` halts the blocking message and everything after it in the thread; ``review``
(or ``requires_human``, low context integrity, an invalid or unreadable message, a
correction cycle) holds the message and everything that refers to it for a human.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from vlp.duplicates import DuplicateKey
from vlp.errors import Problem
from vlp.thread import Thread, references, safety_level
from vlp.validate import message_problems

#: Below this validator-computed context integrity a message is held (VLP-SPEC gating rules).
MIN_CONTEXT_INTEGRITY = 0.7


class Verdict(str, Enum):
    PROCEED = "proceed"
    HOLD = "hold"
    HALT = "halt"

    @property
    def exit_code(self) -> int:
        return {"proceed": 0, "hold": 3, "halt": 4}[self.value]


@dataclass(frozen=True)
class Cause:
    """A message (or unreadable line) that stops automation, and why: ``message`` is the
    message itself, ``index`` its position in the thread (None for an unreadable line)."""

    verdict: Verdict
    reason: str
    id: str | None = None
    line: int | None = None
    index: int | None = None
    message: Any = field(default=None, repr=False, compare=False)

    @property
    def where(self) -> str:
        if self.id is not None:
            return self.id
        return f"line {self.line}" if self.line is not None else f"message #{self.index}"


@dataclass(frozen=True)
class GateResult:
    verdict: Verdict
    causes: list[Cause] = field(default_factory=list)
    halted: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)

    @property
    def proceed(self) -> bool:
        return self.verdict is Verdict.PROCEED


def _hold_reasons(msg: Any, valid: bool) -> list[str]:
    reasons: list[str] = []
    if safety_level(msg) == "review":
        reasons.append("safety.level is review" + _issue_codes(msg))
    safety = msg.get("safety") if isinstance(msg, dict) else None
    if isinstance(safety, dict) and safety.get("requires_human") is True:
        reasons.append("safety.requires_human is true")
    metrics = msg.get("context_metrics") if isinstance(msg, dict) else None
    integrity = metrics.get("context_integrity") if isinstance(metrics, dict) else None
    if isinstance(integrity, (int, float)) and integrity < MIN_CONTEXT_INTEGRITY:
        reasons.append(f"context_integrity {integrity} < {MIN_CONTEXT_INTEGRITY}")
    if not valid:
        codes = sorted({p.code for p in message_problems(msg)})
        reasons.append("invalid message (" + ", ".join(codes) + ")")
    return reasons


def _issue_codes(msg: dict[str, Any]) -> str:
    safety = msg["safety"]
    if not isinstance(safety, dict):  # `"safety": "block"`: the level without its object
        return f" (written as {safety!r}, not as {{'level': ...}})"
    issues = safety.get("issues")
    codes = (
        [i["code"] for i in issues if isinstance(i, dict) and isinstance(i.get("code"), str)]
        if isinstance(issues, list)
        else []
    )
    return f" ({', '.join(codes)})" if codes else ""


def _ident(msg: Any, index: int) -> str:
    ident = msg.get("id") if isinstance(msg, dict) else None
    return ident if isinstance(ident, str) and ident else f"#{index}"


def _blocks_in_some_reading(repeated: Sequence[DuplicateKey]) -> DuplicateKey | None:
    """The repeated ``safety`` (or ``safety.level``) key one of whose values says block."""
    for duplicate in repeated:
        if duplicate.path == "safety":
            levels = [value.get("level") for value in duplicate.values if isinstance(value, dict)]
        elif duplicate.path == "safety.level":
            levels = list(duplicate.values)
        else:
            continue
        if "block" in levels:
            return duplicate
    return None


def gate(
    messages: Thread | Iterable[Any],
    *,
    unreadable: Iterable[Problem] = (),
    duplicates: Mapping[int, Sequence[DuplicateKey]] | None = None,
) -> GateResult:
    """Verdict for a thread: proceed, hold for review, or halt, with the causes.

    ``unreadable`` lists lines that could not be read as messages (they hold: an
    unreadable line might have said ``block``, so a human must look). ``duplicates``
    gives, by position in the thread, the keys a message's text repeats (the parsed
    message holds the last value of each): such a message holds, and halts when any of
    its ``safety`` values says block, whichever value a reader keeps.
    """
    thread = messages if isinstance(messages, Thread) else Thread(messages)
    duplicates = duplicates or {}
    causes: list[Cause] = []
    first_block: int | None = None
    hold_roots: list[int] = []
    for index, (msg, valid, line) in enumerate(zip(thread.messages, thread.valid, thread.lines)):
        ident = msg.get("id") if isinstance(msg, dict) and isinstance(msg.get("id"), str) else None
        if safety_level(msg) == "block":
            causes.append(
                Cause(
                    Verdict.HALT,
                    "safety.level is block" + _issue_codes(msg),
                    ident,
                    line,
                    index,
                    msg,
                )
            )
            if first_block is None:
                first_block = index
        repeated = duplicates.get(index, ())
        blocking = _blocks_in_some_reading(repeated)
        if blocking is not None and safety_level(msg) != "block":
            reason = (
                f"safety.level is block in one of the values of the repeated key '{blocking.path}'"
            )
            causes.append(Cause(Verdict.HALT, reason, ident, line, index, msg))
            if first_block is None:
                first_block = index
        reasons = _hold_reasons(msg, valid) + [
            f"key '{duplicate.path}' is given {len(duplicate.values)} times "
            "(readers disagree on which value counts)"
            for duplicate in repeated
        ]
        for reason in reasons:
            causes.append(Cause(Verdict.HOLD, reason, ident, line, index, msg))
        if reasons:
            hold_roots.append(index)
    for problem in thread.problems():
        if problem.code == "VLP307":
            at = thread.position.get(problem.id) if problem.id is not None else None
            culprit = thread.messages[at] if at is not None else None
            causes.append(
                Cause(Verdict.HOLD, problem.message, problem.id, problem.line, at, culprit)
            )
            if at is not None:
                hold_roots.append(at)
    for problem in unreadable:
        causes.append(Cause(Verdict.HOLD, f"unreadable: {problem.message}", None, problem.line))

    halted: list[str] = []
    if first_block is not None:
        halted = [_ident(msg, i) for i, msg in enumerate(thread.messages) if i >= first_block]
    held = _downstream(thread, hold_roots)
    halted_ids = set(halted)
    held = [ident for ident in held if ident not in halted_ids]

    if first_block is not None:
        verdict = Verdict.HALT
    elif causes:
        verdict = Verdict.HOLD
    else:
        verdict = Verdict.PROCEED
    return GateResult(verdict, causes, halted, held)


def _downstream(thread: Thread, roots: list[int]) -> list[str]:
    """Ids of the root messages and of every message that refers to them, transitively."""
    marked = set(roots)
    marked_ids = {_ident(thread.messages[i], i) for i in marked}
    for index, msg in enumerate(thread.messages):
        if index in marked or not isinstance(msg, dict):
            continue
        if any(ref in marked_ids for ref in references(msg)):
            marked.add(index)
            marked_ids.add(_ident(msg, index))
    return [_ident(thread.messages[i], i) for i in sorted(marked)]
