"""The run record's events: one frozen dataclass per journal event.

The interpreter builds one of these for everything a run does and hands it to
`Runtime.emit`; the journal, the audit trail, traces and the views are its subscribers
and choose what to do by the event's type. The JSON a journal line holds is the codec's
business (`openprose.record.codec`): it is derived from these classes, field by field, in
the order they are declared here, so a line written today has the bytes older versions
wrote.

Adding an event is one class here, decorated with `@journal_event("its_name")`: the
codec, the `Event` union and the hypothesis round-trip test pick it up from the registry.
A field declared with `metadata=OPTIONAL` is left out of the line when it is None (forms
of an event that never carried it), or with `metadata=along(...)` when the field it goes
along with is left out; every other field is always written, null included.
`Streamed` is the one event never journaled: the text of an answer as it streams.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any, ClassVar, TypeVar

from openprose.node_class import open_factory
from openprose.record.frozen import frozen_dataclass as dataclass

JSON = Any  # a value the journal holds as JSON: dicts, lists, strings, numbers, null
OMIT = "omit"  # field metadata key: the field is left out of the line when it is None

_E = TypeVar("_E")

REGISTRY: dict[str, type[Any]] = {}  # journal name -> event class


# A field some forms of the event do not carry: `field(default=None, metadata=OPTIONAL)`,
# None and then not written; with `metadata=along("other")` it is written (null included)
# exactly when that other field is.
OPTIONAL = {OMIT: True}


def along(other: str) -> dict[str, str]:
    return {OMIT: other}


def journal_event(name: str) -> Callable[[type[_E]], type[_E]]:
    """Register an event class under its journal name (`"ev"` of its line, `cls.ev`)."""

    def register(cls: type[_E]) -> type[_E]:
        if name in REGISTRY:
            raise ValueError(f"two events named {name!r}")
        cls.ev = name  # type: ignore[attr-defined]
        REGISTRY[name] = cls
        return cls

    return register


# --- the run -------------------------------------------------------------------------------


@journal_event("run_started")
@dataclass(frozen=True, slots=True, kw_only=True)
class RunStarted:
    ev: ClassVar[str]
    step: str = ""
    run_id: str
    resumed: bool
    inputs: JSON = field(
        default=None, metadata=OPTIONAL
    )  # the run's inputs (runs before issue 30 did not keep them)


@journal_event("run_finished")
@dataclass(frozen=True, slots=True, kw_only=True)
class RunFinished:
    ev: ClassVar[str]
    step: str = ""
    status: str
    error: str | None
    usage: JSON
    outputs: JSON = field(default=None, metadata=OPTIONAL)


@journal_event("agents")
@dataclass(frozen=True, slots=True, kw_only=True)
class AgentsDeclared:
    ev: ClassVar[str]
    step: str
    agents: JSON  # agent name -> {model, prompt, persist, ...}


# --- model calls ---------------------------------------------------------------------------


@journal_event("session_started")
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStarted:
    ev: ClassVar[str]
    step: str
    agent: str | None
    model: str
    binding: str | None
    kind: str
    context: list[str] | None = field(
        default=None, metadata=OPTIONAL
    )  # the names its `context:` gave it


@journal_event("session_finished")
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFinished:
    ev: ClassVar[str]
    step: str
    request: JSON = field(default=None, metadata=OPTIONAL)  # the whole request...
    request_delta: JSON = field(
        default=None, metadata=OPTIONAL
    )  # ...or, for a tool turn, what it added to the last
    response: JSON
    agent: str | None
    model: str
    binding: str | None
    attempt: int
    elapsed: float
    kind: str
    memo: JSON = field(
        default=None, metadata=OPTIONAL
    )  # an answer from the memo: its key, run and step
    inherited: JSON = field(
        default=None, metadata=OPTIONAL
    )  # a fork's answer from its parent: the parent run and step, or `--set`'s binding


# The two events of every model call, built by the VM through their open twins (`open_factory`:
# the same instances as `SessionStarted(...)`, `SessionFinished(...)`, at a fraction of the
# cost; rec30h in docs/decisions.md).
new_session_started = open_factory(SessionStarted)
new_session_finished = open_factory(SessionFinished)


@journal_event("session_failed")
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionFailed:
    ev: ClassVar[str]
    step: str
    attempt: int | None = field(
        default=None, metadata=OPTIONAL
    )  # None: the tool loop gave up (no request failed)
    error: str
    status: int | None = field(
        default=None, metadata=along("attempt")
    )  # HTTP status; None when no answer came
    elapsed: float | None = field(default=None, metadata=OPTIONAL)
    retried: bool | None = field(default=None, metadata=OPTIONAL)
    request: JSON = field(default=None, metadata=OPTIONAL)
    request_delta: JSON = field(default=None, metadata=OPTIONAL)


@journal_event("session_cancelled")
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionCancelled:
    ev: ClassVar[str]
    step: str
    attempt: int


@journal_event("session_served")
@dataclass(frozen=True, slots=True, kw_only=True)
class SessionServed:
    ev: ClassVar[str]
    step: str
    binding: str | None = None


@journal_event("request_retried")
@dataclass(frozen=True, slots=True, kw_only=True)
class RequestRetried:
    ev: ClassVar[str]
    step: str
    attempt: int
    request: int  # which request of the attempt (the provider's own retries)
    status: int | None
    error: str
    elapsed: float
    delay: float


@journal_event("memory_updated")
@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryUpdated:
    ev: ClassVar[str]
    step: str
    agent: str
    memory: str
    segment: int


# --- judgments and failures ----------------------------------------------------------------


@journal_event("decision")
@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    ev: ClassVar[str]
    step: str
    kind: str
    question: str | None = field(default=None, metadata=OPTIONAL)  # absent for a literal verdict
    answer: str | None = field(default=None, metadata=OPTIONAL)
    verdict: JSON
    reason: str
    attempts: int | None = field(default=None, metadata=OPTIONAL)


@journal_event("decision_served")
@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionServed:
    ev: ClassVar[str]
    step: str
    kind: str


@journal_event("decision_failed")
@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionFailed:
    ev: ClassVar[str]
    step: str
    kind: str
    question: str


@journal_event("race_decided")
@dataclass(frozen=True, slots=True, kw_only=True)
class RaceDecided:
    ev: ClassVar[str]
    step: str
    won: list[int]
    failed: list[int]


@journal_event("error_caught")
@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorCaught:
    ev: ClassVar[str]
    step: str
    error: str
    kind: str


@journal_event("failure_handled")
@dataclass(frozen=True, slots=True, kw_only=True)
class FailureHandled:
    ev: ClassVar[str]
    step: str
    failures: dict[str, str]  # failed call's step -> its message


@journal_event("failure_released")
@dataclass(frozen=True, slots=True, kw_only=True)
class FailureReleased:
    ev: ClassVar[str]
    step: str
    failures: dict[str, str]


@journal_event("failure_served")
@dataclass(frozen=True, slots=True, kw_only=True)
class FailureServed:
    ev: ClassVar[str]
    step: str
    binding: str | None = field(default=None, metadata=OPTIONAL)
    error: str


# --- prompts -------------------------------------------------------------------------------


@journal_event("unbound_placeholder")
@dataclass(frozen=True, slots=True, kw_only=True)
class UnboundPlaceholder:
    ev: ClassVar[str]
    step: str
    name: str


@journal_event("prompt_over_budget")
@dataclass(frozen=True, slots=True, kw_only=True)
class PromptOverBudget:
    ev: ClassVar[str]
    step: str
    task_chars: int


@journal_event("context_trimmed")
@dataclass(frozen=True, slots=True, kw_only=True)
class ContextTrimmed:
    ev: ClassVar[str]
    step: str
    label: str
    omitted_chars: int


@journal_event("context_windowed")
@dataclass(frozen=True, slots=True, kw_only=True)
class ContextWindowed:
    ev: ClassVar[str]
    step: str
    omitted_items: int
    shown_items: int


# --- tools, skills and approvals -----------------------------------------------------------


@journal_event("skill_loaded")
@dataclass(frozen=True, slots=True, kw_only=True)
class SkillLoaded:
    ev: ClassVar[str]
    step: str
    name: str
    description: str | None = field(default=None, metadata=OPTIONAL)
    instructions: str | None = field(
        default=None, metadata=OPTIONAL
    )  # absent in journals older than resumable skills
    folder: str | None = field(default=None, metadata=OPTIONAL)
    sha256: str | None = field(default=None, metadata=OPTIONAL)


@journal_event("skill_missing")
@dataclass(frozen=True, slots=True, kw_only=True)
class SkillMissing:
    ev: ClassVar[str]
    step: str
    problem: str


@journal_event("tool_call")
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCalled:
    ev: ClassVar[str]
    step: str
    turn: int
    index: int
    call: JSON  # {id, name, arguments}


@journal_event("tool_result")
@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResulted:
    ev: ClassVar[str]
    step: str
    turn: int
    index: int
    call_id: str
    tool: str
    content: str
    is_error: bool = False
    omitted_bytes: int = 0


@journal_event("permission")
@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionDecided:
    """A permission check of one tool call. A grant for the run is honoured only when its
    seal holds, so a line lacking the call's details (hand-written, forged) is read and
    reported by that check rather than stopping the resume."""

    ev: ClassVar[str]
    step: str
    turn: int = 0
    index: int = 0
    call_id: str = ""
    tool: str = ""
    kind: str
    action: str
    decision: str
    reason: str = ""
    scope: str | None = field(default=None, metadata=OPTIONAL)  # "run": remembered by a resume too
    seal: str | None = field(default=None, metadata=OPTIONAL)


@journal_event("approval_requested")
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested:
    ev: ClassVar[str]
    step: str
    turn: int
    index: int
    id: str
    kind: str
    action: str
    tool: str
    agent: str | None = None
    digest: str = ""  # absent in journals older than sealed answers


@journal_event("approval_decided")
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalDecided:
    """A person's answer, appended by `prose approve` while the run waits. Only `id` is
    required: a line lacking the rest (hand-written, forged) is read, and its seal check
    ignores and reports it rather than stopping the resume."""

    ev: ClassVar[str]
    step: str
    id: str
    answer: str = ""
    tool: str = ""
    kind: str = ""
    action: str = ""
    digest: str = ""
    by: str = ""
    seal: str | None = field(default=None, metadata=OPTIONAL)  # None: a line without one


@journal_event("approval_ignored")
@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalIgnored:
    ev: ClassVar[str]
    step: str = ""
    id: str
    what: str
    reason: str


# --- asking a person (`ask`) -----------------------------------------------------------------


@journal_event("question_asked")
@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionAsked:
    """An `ask`, journaled before anyone is asked (`vm.questions.Question.to_event`)."""

    ev: ClassVar[str]
    step: str
    id: str
    question: str
    options: list[str]
    default: str | None
    timeout: float | None
    digest: str


@journal_event("question_answered")
@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionAnswered:
    """A person's answer to an `ask` (sealed: `user`, `answered`, `seal`; an answer given
    without the user's key has none of them). Only `id` is required, as for an approval:
    a hand-written line is read and ignored-and-reported by its seal check."""

    ev: ClassVar[str]
    step: str
    id: str
    answer: JSON = None  # text; anything else fails the seal check
    digest: str = ""
    by: str = ""
    user: str | None = field(default=None, metadata=OPTIONAL)
    answered: JSON = field(default=None, metadata=OPTIONAL)  # seconds since the epoch
    seal: JSON = field(default=None, metadata=OPTIONAL)


@journal_event("question_ignored")
@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionIgnored:
    ev: ClassVar[str]
    step: str
    id: str
    what: str
    reason: str


@journal_event("question_expired")
@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionExpired:
    ev: ClassVar[str]
    step: str
    id: str
    timeout: float | None


# --- typed answers ---------------------------------------------------------------------------


@journal_event("typed_invalid")
@dataclass(frozen=True, slots=True, kw_only=True)
class TypedInvalid:
    """An answer that did not match its declared shape: asked again once."""

    ev: ClassVar[str]
    step: str
    problems: list[str]


@journal_event("typed_failed")
@dataclass(frozen=True, slots=True, kw_only=True)
class TypedFailed:
    """The answer asked again did not match either: the session fails."""

    ev: ClassVar[str]
    step: str
    problems: list[str]


# --- what only early journals hold ---------------------------------------------------------


@journal_event("model_turn")
@dataclass(frozen=True, slots=True, kw_only=True)
class ModelTurn:
    """A tool loop's model call as the first versions with tools journaled it (later ones
    journal `session_finished` under a sub-step): read for its exchange, never written."""

    ev: ClassVar[str]
    step: str
    turn: JSON = field(default=None, metadata=OPTIONAL)
    request: JSON = field(default=None, metadata=OPTIONAL)
    response: JSON


# --- what no journal holds -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnknownEvent:
    """A line of an event this version does not know (a newer one wrote it): kept whole."""

    ev: str
    step: str
    fields: dict[str, JSON]


@dataclass(frozen=True, slots=True)
class Streamed:
    """The answer of the call at `step` so far, while it streams: never journaled."""

    step: str
    text: str


Event = (
    RunStarted
    | RunFinished
    | AgentsDeclared
    | SessionStarted
    | SessionFinished
    | SessionFailed
    | SessionCancelled
    | SessionServed
    | RequestRetried
    | MemoryUpdated
    | Decision
    | DecisionServed
    | DecisionFailed
    | RaceDecided
    | ErrorCaught
    | FailureHandled
    | FailureReleased
    | FailureServed
    | UnboundPlaceholder
    | PromptOverBudget
    | ContextTrimmed
    | ContextWindowed
    | SkillLoaded
    | SkillMissing
    | ToolCalled
    | ToolResulted
    | PermissionDecided
    | ApprovalRequested
    | ApprovalDecided
    | ApprovalIgnored
    | QuestionAsked
    | QuestionAnswered
    | QuestionIgnored
    | QuestionExpired
    | TypedInvalid
    | TypedFailed
    | ModelTurn
    | UnknownEvent
)
