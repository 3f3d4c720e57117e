"""What one run shares: settings, agents and imported programs, model routing, the replay
log of a resumed run, usage counters and the event sink (journal + observer)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprose import nodes as n
from openprose.contracts import contract_of
from openprose.providers.base import ModelResponse, Provider
from openprose.providers.prices import Prices
from openprose.record.codec import EventDamaged, decode, described
from openprose.record.events import (
    ApprovalDecided,
    ApprovalRequested,
    Decision,
    DecisionFailed,
    Event,
    FailureHandled,
    FailureReleased,
    MemoryUpdated,
    PermissionDecided,
    QuestionAnswered,
    QuestionAsked,
    RaceDecided,
    SessionFinished,
    SkillLoaded,
    ToolResulted,
    TypedInvalid,
)
from openprose.record.journal import Journal
from openprose.vm.prompts import DEFAULT_CONTEXT_BUDGET, DEFAULT_HISTORY_ITEMS
from openprose.vm.questions import Asker, NobodyAsker, Question
from openprose.vm.subscribers import Observer, Subscriber
from openprose.vm.tools.approvals import Approver, NobodyApprover

if TYPE_CHECKING:
    from openprose.providers.settings import ProviderSettings
    from openprose.record.audit import AuditTrail
    from openprose.telemetry.spans import Tracer
    from openprose.vm.forking import ParentAnswers

# Model calls a run may make unless told otherwise: enough for real programs, a stop for a
# `loop:` that never ends (docs/decisions.md, issue 20 runtime).
DEFAULT_MAX_SESSIONS = 1000


DEFAULT_MAX_TURNS = 20  # model turns of one session's tool loop


@dataclass(slots=True)
class ToolTurns:
    """What an earlier attempt at this run journaled for tool loops, by step. Answers and
    "allow for this run" grants are kept as journaled: `vm.approvals.honoured_answers`
    checks their seals before any of them is used."""

    results: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    requests: dict[str, dict[str, Any]] = field(default_factory=dict)  # approval id -> latest
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> its answer line
    run_grants: list[dict[str, Any]] = field(default_factory=list)  # `permission`, scope run
    skills: dict[str, dict[str, Any]] = field(default_factory=dict)  # skill_loaded, by name
    questions: dict[str, dict[str, Any]] = field(default_factory=dict)  # step -> question_asked
    replies: dict[str, dict[str, Any]] = field(default_factory=dict)  # question id -> answer

    @classmethod
    def of(cls, records: Iterable[Mapping[str, Any]]) -> ToolTurns:
        """What journal lines (as read) hold of tool loops; a damaged line is skipped."""
        turns = cls()
        for record in records:
            try:
                turns.add(decode(record).event, record)
            except EventDamaged:
                continue
        return turns

    def add(self, event: Event, record: Mapping[str, Any]) -> None:
        """`event` as decoded from the journal line `record` (kept as journaled)."""
        match event:
            case SkillLoaded(name=name, instructions=instructions) if instructions is not None:
                self.skills[name] = dict(record)
            case ToolResulted(step=step, turn=turn, index=index):
                self.results[(step, int(turn), int(index))] = dict(record)
            case ApprovalRequested(id=asked):
                # Asked again (an earlier answer was used up or did not hold): answered anew.
                self.requests[str(asked)] = dict(record)
                self.answers.pop(str(asked), None)
            case PermissionDecided(scope="run"):
                self.run_grants.append(dict(record))
            case ApprovalDecided(id=answered):
                self.answers[str(answered)] = dict(record)
            case QuestionAsked(step=step):  # `ask`: vm.questions checks each answer's seal
                Question.from_event(record)  # one of the wrong shape is named, never served
                self.questions[step] = dict(record)
            case QuestionAnswered(id=answered):
                self.replies[str(answered)] = dict(record)

    @property
    def pending(self) -> dict[str, dict[str, Any]]:
        """Requests no line answers (whether an answer holds is `honoured_answers`' call)."""
        return {i: r for i, r in self.requests.items() if i not in self.answers}


@dataclass(slots=True)
class ToolRuntime:
    """What every tool session of one run shares: who answers `prompt` permissions, the
    project's default permissions (`prose.toml` `[permissions]`), what was allowed for
    the rest of the run, and how such an allowance is sealed for a resume to trust."""

    approver: Approver = field(default_factory=NobodyApprover)
    default_permissions: Mapping[str, Any] = field(default_factory=dict)
    grants: set[tuple[str, str]] = field(default_factory=set)
    sandbox_limits: Any = None  # `[sandbox]` of prose.toml (a SandboxLimits); None: defaults
    plan: bool = False  # `--permission-mode plan`: every write, command and fetch refused
    seal_grant: Callable[[str, str], str] | None = None
    asker: Asker = field(default_factory=NobodyAsker)  # who answers an `ask` (vm.questions)
    run_id: str = ""  # the id a person's answers are sealed with (the run folder's name)
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)  # `[mcp.servers]`: McpServer

    def for_one_run(self) -> ToolRuntime:
        """A run's own copy: "allow for this run" grants must not reach the other runs of a
        batch, which share one runtime. Built field by field (~1 us; `dataclasses.replace`
        costs ~3.4 us, once per run of a batch)."""
        return ToolRuntime(
            self.approver,
            self.default_permissions,
            set(self.grants),
            self.sandbox_limits,
            self.plan,
            self.seal_grant,
            self.asker,
            self.run_id,
            self.mcp_servers,
        )


@dataclass(frozen=True, slots=True)
class VMConfig:
    default_model: str = "sonnet"
    evaluator_model: str = "haiku"
    context_budget: int = DEFAULT_CONTEXT_BUDGET  # characters of context per request
    history_items: int = DEFAULT_HISTORY_ITEMS  # default context without `context:`
    max_depth: int = 100  # block recursion
    retry_base_delay: float = 1.0  # seconds; `backoff: linear` waits this, exponential doubles
    max_concurrency: int = 16  # workers of pmap / parallel for (requests: per provider)
    max_tokens: int = 1024  # per request (the answer's length)
    max_turns: int = DEFAULT_MAX_TURNS  # model turns of one session's tool loop
    tool_output_cap: int = 64 * 1024  # bytes of one tool result the model sees
    command_timeout: float = 60.0  # seconds a shell command may run at most
    max_tool_calls_per_turn: int = 32  # tool calls run of one model turn (the rest refused)
    max_tool_calls_per_session: int = 200  # tool calls run in one session's tool loop
    search_timeout: float = 10.0  # seconds one search_files call may take
    # Budgets of the whole run (None: no limit); see `budget`. Every model call counts as a
    # session here (judgments and memory updates are billed too).
    max_sessions: int | None = DEFAULT_MAX_SESSIONS
    max_run_tokens: int | None = None  # input + output, all calls
    max_cost: float | None = None  # USD; needs a price for every model the run uses
    audit: bool = True  # write audit.ndjson (the VLP audit trail); see `audit`
    memo: bool = False  # answer calls asked before from `.prose/memo/`; see `memo`


@dataclass(frozen=True, slots=True)
class AgentSpec:
    name: str
    model: str | None = None
    prompt: n.StringLit | None = None
    persist: str | None = None  # "true" | "project" | "user" | a path
    skills: tuple[str, ...] = ()
    permissions: Mapping[str, Any] = field(default_factory=dict)
    # The caps of the imports it came through, outermost first (`Permissions.within`).
    ceilings: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class LoadedProgram:
    """An imported program, resolved and parsed before the run starts."""

    name: str  # the name it is called by (alias or slug)
    spec: str
    namespace: str  # folder under imports/: {handle}--{slug}
    program: n.Program
    text: str
    content_hash: str
    imports: Mapping[str, LoadedProgram] = field(default_factory=dict)
    # What its agents may at most do, outermost import first: a remote program's cap and
    # the grants of prose.toml `[imports.grants."SPEC"]` (`loader.ceiling_of`).
    ceilings: tuple[Mapping[str, Any], ...] = ()

    @property
    def inputs(self) -> tuple[str, ...]:
        return contract_of(self.program).inputs

    @property
    def outputs(self) -> tuple[str, ...]:
        return contract_of(self.program).outputs


class ModelRouter:
    """Alias -> (provider, model id). Providers other than the selected one open on first use."""

    def __init__(self, provider: Provider, settings: ProviderSettings | None = None) -> None:
        self._provider = provider
        self._settings = settings
        self._opened: dict[str, Provider] = {}
        self._cache: dict[str, tuple[Provider, str]] = {}

    def route(self, alias: str) -> tuple[Provider, str]:
        hit = self._cache.get(alias)
        if hit is not None:
            return hit
        if self._settings is None:
            found = (self._provider, alias)
        else:
            from openprose.providers import open_provider
            from openprose.providers.settings import resolve_model

            name, model = resolve_model(alias, self._settings)
            if name == self._settings.provider:
                found = (self._provider, model)
            else:
                if name not in self._opened:
                    self._opened[name] = open_provider(self._settings, name)
                found = (self._opened[name], model)
        self._cache[alias] = found
        return found

    async def aclose(self) -> None:
        for provider in self._opened.values():
            await provider.aclose()


@dataclass(frozen=True, slots=True)
class Race:
    """How a `first`/`any` race ended: the branches (or items) that succeeded and failed
    before the rest were cancelled."""

    won: tuple[int, ...]
    failed: tuple[int, ...]

    @property
    def ran(self) -> list[int]:
        return sorted((*self.won, *self.failed))


@dataclass(slots=True)
class Replay:
    """Finished work of an earlier attempt at this run, by step id."""

    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    memories: dict[str, dict[str, Any]] = field(default_factory=dict)
    races: dict[str, Race] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)  # handled failed calls: message
    # steps whose typed answer the journal already says was invalid (`typed_invalid`): the
    # answer is served again on resume and found invalid again, but is journaled once
    reasked: set[str] = field(default_factory=set)
    tools: ToolTurns = field(default_factory=ToolTurns)  # tool results, approvals
    # A fork's: the answers of the run it was forked from, each for an identical request
    inherited: ParentAnswers | None = None

    @classmethod
    def from_events(cls, events: Any) -> Replay:
        """The finished work in `events` (journal lines as read); an event that would be
        served but has the wrong shape is a `ValueError` naming it (the run cannot be
        resumed as it is)."""
        replay = cls()
        for number, record in enumerate(events, 1):
            try:
                replay._add(record)
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError) as error:
                what = f"missing {error}" if isinstance(error, KeyError) else str(error)
                raise ValueError(
                    f"event {number} ({described(record)}) is damaged: {what}"
                ) from None
        return replay

    def _add(self, record: Mapping[str, Any]) -> None:
        try:
            event = decode(record).event
        except EventDamaged as damaged:
            if damaged.kind in _SERVED:
                raise
            return  # a damaged line of an event nothing serves: as if lost to a crash
        step = event.step
        match event:
            case SessionFinished(response=response):
                ModelResponse.from_dict(response)
                self.sessions[step] = dict(record)
            case Decision(answer=answer) if answer is not None:  # a literal verdict has none
                self.decisions[step] = dict(record)
            case DecisionFailed():
                # its unreadable answers are asked again (perhaps of another evaluator);
                # when the program handled the failure, `failure_handled` serves it
                for attempt in ("~1", "~2"):
                    self.sessions.pop(step + attempt, None)
            case MemoryUpdated(memory=memory, segment=segment):
                str(memory), int(segment)
                self.memories[step] = dict(record)
            case RaceDecided(won=won, failed=failed):
                if not isinstance(won, list) or not isinstance(failed, list):
                    raise TypeError("`won` and `failed` must be lists")
                self.races[step] = Race(tuple(won), tuple(failed))
            case FailureHandled(failures=failures):
                for failed_step, message in dict(failures).items():
                    self.failures[str(failed_step)] = str(message)
            case FailureReleased(failures=failures):
                for failed_step in dict(failures):
                    self.failures.pop(str(failed_step), None)
            case TypedInvalid():
                self.reasked.add(step)
            case _:
                self.tools.add(event, record)


# The events a resume serves: one of them damaged stops the resume.
_SERVED = frozenset(
    (SessionFinished, Decision, DecisionFailed, MemoryUpdated, RaceDecided, FailureHandled,
     FailureReleased, SkillLoaded, ToolResulted, ApprovalRequested, PermissionDecided,
     ApprovalDecided, QuestionAsked, QuestionAnswered)
)  # fmt: skip


_UNSEEN = object()


@dataclass(slots=True)
class RunStats:
    sent: int = 0  # model calls sent to a provider and answered
    # requests a provider received: every attempt, failed ones and transient retries too
    # (`providers.resilient.REQUEST_TALLY`); those beyond `sent` got no usable answer
    requests: int = 0
    served: int = 0  # model calls answered from the journal
    memoized: int = 0  # model calls answered from the answer cache of earlier runs
    in_flight: int = 0  # model calls sent and not answered yet
    input_tokens: int = 0  # the whole prompts, cache reads and writes included
    output_tokens: int = 0
    cache_read_tokens: int = 0  # prompt tokens read from a provider's prompt cache
    cache_write_tokens: int = 0  # and written to it
    by_model: dict[str, list[int]] = field(default_factory=dict)  # in, out, read, written
    prices: Prices = field(default_factory=Prices.default)
    cost: float = 0.0  # USD, of the calls whose model has a price
    unpriced: dict[str, int] = field(default_factory=dict)  # model -> tokens with no price
    _prices_seen: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def count(self, model: str, response: ModelResponse) -> None:
        usage = response.usage
        spent_in, spent_out = usage.input_tokens, usage.output_tokens
        read, written = usage.cache_read_tokens, usage.cache_write_tokens
        self.input_tokens += spent_in
        self.output_tokens += spent_out
        self.cache_read_tokens += read
        self.cache_write_tokens += written
        totals = self.by_model.get(model)
        if totals is None:
            totals = self.by_model[model] = [0, 0, 0, 0]
        totals[0] += spent_in
        totals[1] += spent_out
        totals[2] += read
        totals[3] += written
        price = self._prices_seen.get(model, _UNSEEN)
        if price is _UNSEEN:  # looked up once per model (an unknown one costs a regex)
            price = self._prices_seen[model] = self.prices.price_of(model)
        if price is not None:
            # per request: prices may be tiered
            self.cost += price.cost(spent_in, spent_out, read, written)
        elif spent_in or spent_out:
            self.unpriced[model] = self.unpriced.get(model, 0) + spent_in + spent_out

    def usage(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            **_cached(self.cache_read_tokens, self.cache_write_tokens),
            "requests_sent": self.sent,
            # sent too, but answered with an error or not at all (retries included)
            "requests_failed": max(0, self.requests - self.sent),
            "requests_served_from_journal": self.served,
            **({"requests_served_from_memo": self.memoized} if self.memoized else {}),
            "by_model": {
                m: {"input_tokens": i, "output_tokens": o, **_cached(r, w)}
                for m, (i, o, r, w) in self.by_model.items()
            },
            # The cost of the priced calls; `unpriced_models` says what it leaves out.
            "cost_usd": round(self.cost, 6),
            "unpriced_models": dict(self.unpriced),
        }


def _cached(read: int, written: int) -> dict[str, int]:
    """Cache counts as the journal has them: present when the cache played a part, so a
    run's figures keep the form they had before prompt caching."""
    counts = {"cache_read_tokens": read} if read else {}
    if written:
        counts["cache_write_tokens"] = written
    return counts


@dataclass(slots=True)
class Shared:
    """What every interpreter of one run shares, invoked programs included."""

    router: ModelRouter
    journal: Journal
    config: VMConfig
    replay: Replay
    project_dir: Path
    stats: RunStats = field(default_factory=RunStats)
    observer: Observer | None = None
    audit: AuditTrail | None = None
    tracer: Tracer | None = None  # OpenTelemetry, when tracing is on
    execution_ids: int = 0
    anon_names: int = 0
    memory_locks: dict[Path, asyncio.Lock] = field(default_factory=dict)  # one per memory folder
    tools: ToolRuntime = field(default_factory=ToolRuntime)
    # The observer's streaming hook, looked up once (not per call: observers may be fan-outs).
    _answer_text: Any = field(default=None, init=False, repr=False)
    streams: bool = field(default=False, init=False)  # an observer shows answers as they stream
    # Who gets each event after the journal: the audit trail, traces, the views, `events()`.
    subscribers: list[Subscriber] = field(default_factory=list)
    # Subscribers whose class names `only_events`: event class -> those handed it.
    _only: dict[type[Any], list[Subscriber]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._answer_text = getattr(self.observer, "answer_text", None)
        self.streams = self._answer_text is not None
        if self.audit is not None:
            self.subscribers.append(self.audit.add)
        if self.tracer is not None:
            self.subscribers.append(self.tracer.on_event)
        if self.observer is not None:
            self.subscribe(self.observer)
        if self.audit is not None:
            # The trail never gets ahead of the journal: a resume derives the missing part
            # of the trail from the journal, so the journal must hold all it has.
            self.journal.when_written(self.audit.written)
        hold = getattr(self.observer, "hold_until_written", None)
        if hold is not None:  # lines on the terminal show only what the journal has
            self.journal.when_written(hold())

    def emit(self, event: Event) -> None:
        """Record `event` in the journal, then hand it to every subscriber with its time."""
        t = self.journal.record(event)
        for subscriber in self.subscribers:
            subscriber(event, t)
        if self._only:
            for subscriber in self._only.get(type(event), ()):
                subscriber(event, t)

    def subscribe(self, subscriber: Subscriber) -> None:
        """Hand every event from now on to `subscriber` too (the interpreter never changes
        for a new consumer), or only those of the classes its class names `only_events`."""
        only = getattr(type(subscriber), "only_events", None)
        if only is None:
            self.subscribers.append(subscriber)
            return
        for kind in only:
            self._only.setdefault(kind, []).append(subscriber)

    def commit(self) -> None:
        """Write every event emitted so far to the journal now: called before something
        outside the process acts on it (a tool runs, an approval is asked, outputs are
        written); otherwise the journal writes once per event-loop turn."""
        self.journal.flush()

    def watching(self, step: str) -> AbstractContextManager[None]:
        """Around a model call: an observer with `answer_text(step, text)` (the live view)
        gets the answer as it streams, and `answer_restarted(step)` when a retry starts it
        over; its `watches(step)`, when it has one, may decline a session it would not show.
        Nothing of it reaches the journal, which records whole answers; without such an
        observer the call is made unstreamed."""
        show = self._answer_text
        if show is None:
            return _NOTHING_WATCHED
        watches = getattr(self.observer, "watches", None)
        if watches is not None and not watches(step):
            return _NOTHING_WATCHED
        from openprose.providers.streaming import stream_text_to

        restarted = getattr(self.observer, "answer_restarted", None)
        waiting = getattr(self.observer, "answer_waiting", None)
        return stream_text_to(
            lambda text: show(step, text),
            on_restart=None if restarted is None else lambda: restarted(step),
            on_wait=None if waiting is None else lambda note: waiting(step, note),
        )


_NOTHING_WATCHED = nullcontext()  # reusable: it holds no state
