"""What a fork takes from the run it was forked from (`prose fork RUN --at STEP`).

A fork is a new run of RUN's program. Its model call at a step gets RUN's answer instead of
being sent when RUN had finished that step before STEP started (in RUN's journal order) and
the request is identical to the one RUN sent there (model id, messages, system prompt,
`max_tokens`, temperature, schema, tools). Any other call is sent: STEP itself, what came
after it, what ran beside it in a parallel block and had not finished when it started, and
every call whose prompt an input changed. `--set NAME=VALUE` answers the call that bound
NAME last before STEP with VALUE, whatever its request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprose.providers.base import ModelRequest, ModelResponse
from openprose.record.codec import EventDamaged, decode, readable
from openprose.record.events import Decision, SessionFailed, SessionFinished, SessionStarted
from openprose.record.exchanges import Exchanges, answered

__all__ = [
    "Fork",
    "Inherited",
    "ParentAnswers",
    "UnknownStep",
    "cut_at",
    "fork_steps",
    "resumed_fork_answers",
    "within",
]

# What follows a step id inside a longer one that runs within it (see `openprose.record.steps`).
_NESTING = ".[#|:>@/?!~"
_TURN = re.compile(r"~t\d+$")  # a tool loop's later turn (`steps.turn_step`)
# Events naming a step that `prose show` lists: sessions (also failed or cut short) and
# judgments. A fork may start at any of them.
_STEP_EVENTS = (SessionStarted, SessionFinished, SessionFailed, Decision)


class UnknownStep(ValueError):
    """STEP is none of the run's steps; `steps` are those it has, in journal order."""

    def __init__(self, step: str, steps: list[str]) -> None:
        super().__init__(step)
        self.step = step
        self.steps = steps


def within(step: str, outer: str) -> bool:
    """`step` is `outer`, or runs inside it (a nested statement, a turn, a judgment)."""
    return step == outer or (
        len(step) > len(outer) and step.startswith(outer) and step[len(outer)] in _NESTING
    )


def fork_steps(events: Iterable[dict[str, Any]]) -> list[str]:
    """The steps a fork may start at, in the order the run first reached them."""
    steps: dict[str, None] = {}
    for record in events:
        try:
            event = decode(record).event
        except EventDamaged:
            continue  # no step a fork can start at
        if isinstance(event, _STEP_EVENTS) and event.step:
            steps.setdefault(event.step, None)
    return list(steps)


@dataclass(frozen=True, slots=True)
class Inherited:
    """An answer a fork takes instead of sending the call; `origin` is journaled with it:
    `{"run", "step"}` for the parent's answer, `{"set"}` for a value `--set` gave."""

    response: ModelResponse
    origin: dict[str, str]


@dataclass(frozen=True, slots=True)
class Cut:
    """The parent's journal up to the start of the fork's step: its finished calls
    (step -> request and answer) and the step that last bound each name."""

    answers: dict[str, tuple[str, ModelResponse]] = field(default_factory=dict)
    bound_at: dict[str, str] = field(default_factory=dict)


def cut_at(records: Iterable[dict[str, Any]], step: str) -> Cut:
    """What the parent had finished when `step` (or anything within it) first started;
    `UnknownStep` when its journal (`records`, its lines as read) never reaches `step`. A
    statement holding steps (a loop, a `parallel` block) is a step too: the fork asks all
    of it again."""
    records = list(records)
    steps = fork_steps(records)
    if not any(within(known, step) for known in steps):
        raise UnknownStep(step, steps)
    cut = Cut()
    rebuilt = Exchanges()
    for recorded in readable(records):
        at = recorded.event.step
        if at and within(at, step):
            break
        exchange = answered(recorded.event)
        request = None if exchange is None else rebuilt.request_of(exchange)
        if exchange is None or request is None:
            continue  # not an answer, or a turn whose base a crash lost: asked again
        cut.answers[at] = (
            canonical(ModelRequest.from_dict(request)),
            ModelResponse.from_dict(exchange.response),
        )
        binding = exchange.binding if isinstance(exchange, SessionFinished) else None
        if binding and not _TURN.search(at):
            # a tool loop's session is set at its first turn: its tools are not run
            cut.bound_at[binding] = at
    return cut


class ParentAnswers:
    """The answers a fork may take, each once, at its own step (`take`)."""

    def __init__(
        self,
        parent: str,
        cut: Cut,
        values: Mapping[str, str] | None = None,
    ) -> None:
        """`values`: binding name -> the text its last call before the fork's step answers
        (the caller checked that `cut.bound_at` has every name)."""
        self.parent = parent
        self._answers = dict(cut.answers)
        self._values: dict[str, tuple[str, str]] = {
            cut.bound_at[name]: (name, text) for name, text in (values or {}).items()
        }

    def take(self, step: str, request: ModelRequest) -> Inherited | None:
        """The answer for the call at `step` asking `request`, or None: send it."""
        value = self._values.pop(step, None)
        if value is not None:
            self._answers.pop(step, None)
            name, text = value
            return Inherited(ModelResponse(text, model=request.model), {"set": name})
        recorded = self._answers.get(step)
        if recorded is None or recorded[0] != canonical(request):
            return None
        del self._answers[step]
        return Inherited(recorded[1], {"run": self.parent, "step": step})


@dataclass(frozen=True, slots=True)
class Fork:
    """A new run forked from another: `origin` goes into its run.json as `forked_from`
    (`run`, `step`, and the `inputs` and `set` values it changed)."""

    origin: dict[str, Any]
    answers: ParentAnswers


def resumed_fork_answers(run_dir: Path, meta: Mapping[str, Any]) -> ParentAnswers | None:
    """For a fork being resumed: what it may still take from its parent, as when it started
    (None when it is no fork, or its parent's journal is gone or unreadable: those calls are
    sent)."""
    origin = meta.get("forked_from")
    if not isinstance(origin, dict):
        return None
    parent, step, values = origin.get("run"), origin.get("step"), origin.get("set") or {}
    if not isinstance(parent, str) or not isinstance(step, str) or not isinstance(values, dict):
        return None
    from openprose.record.journal import JOURNAL_FILE, read_journal

    parent_dir = run_dir.parent / parent
    try:
        cut = cut_at(read_journal(parent_dir / JOURNAL_FILE), step)
    except (OSError, KeyError, TypeError, ValueError, AttributeError, OverflowError):
        return None  # UnknownStep included
    known = {str(name): str(text) for name, text in values.items() if name in cut.bound_at}
    return ParentAnswers(parent, cut, known)


def canonical(request: ModelRequest) -> str:
    """The request as compared: everything that is sent, keys sorted."""
    return json.dumps(request.to_dict(), sort_keys=True, ensure_ascii=False)
